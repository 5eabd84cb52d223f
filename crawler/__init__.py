"""One peer's focused crawler: fetching, politeness, frontier, parsing, dedup, repository and search.

Nothing here knows about peers; the node composes it with `p2p` and `metamodels`.
"""
