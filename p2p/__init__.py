"""The peer-to-peer layer: libp2p host, identity, membership, topic communities, wire protocols.

Importing this package is cheap; `libp2p` itself (1-2.5 s to import) is imported only by the modules that
start hosts.
"""
