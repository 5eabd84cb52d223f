from __future__ import annotations

import logging
import os
import stat

import multiaddr
import pytest
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.insecure.transport import PLAINTEXT_PROTOCOL_ID, InsecureTransport

from p2p.host import NetworkError, connection_config, quiet_libp2p_logging
from p2p.identity import IdentityError, load_or_create_identity, peer_id_of
from p2p.settings import P2PSettings

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


def test_stream_negotiation_may_take_as_long_as_a_request():
    config = connection_config(P2PSettings(request_timeout=45.0))
    assert config.outbound_stream_protocol_negotiation_timeout == 45.0
    assert config.inbound_stream_protocol_negotiation_timeout == 45.0
    assert config.max_connections_per_peer == 1


def test_short_request_timeout_keeps_the_library_negotiation_bound():
    config = connection_config(P2PSettings(request_timeout=2.0))
    assert config.outbound_stream_protocol_negotiation_timeout == 10.0
    assert config.inbound_stream_protocol_negotiation_timeout == 10.0


def test_identity_created_on_first_start_with_owner_only_mode(tmp_path):
    path = tmp_path / "data" / "identity.key"
    key_pair = load_or_create_identity(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert peer_id_of(load_or_create_identity(path)) == peer_id_of(key_pair)


def test_identity_readable_by_others_is_refused_with_the_fix(tmp_path):
    path = tmp_path / "identity.key"
    load_or_create_identity(path)
    os.chmod(path, 0o644)
    with pytest.raises(IdentityError, match="chmod 600"):
        load_or_create_identity(path)


def test_identity_file_that_is_not_a_key_is_refused(tmp_path):
    path = tmp_path / "identity.key"
    path.write_bytes(b"not a key")
    os.chmod(path, 0o600)
    with pytest.raises(IdentityError, match="not a libp2p private key"):
        load_or_create_identity(path)


@pytest.mark.trio
async def test_two_hosts_connect_over_noise_with_one_connection_each_way(start_hosts):
    with trio.fail_after(20):
        async with start_hosts(2) as (a, b):
            await b.connect_addr(a.addrs()[0])
            await a.connect(b.peer_id, b.transport_addrs())
            await b.connect_addr(a.addrs()[0])
            assert a.is_connected(b.peer_id) and b.is_connected(a.peer_id)
            assert len(a.host.get_network().connections[b.peer_id]) == 1
            assert len(b.host.get_network().connections[a.peer_id]) == 1
            conn = b.host.get_network().connections[a.peer_id][0]
            assert conn.get_negotiated_security_protocol() == "/noise"
            assert conn.get_negotiated_muxer_protocol() == "/yamux/1.0.0"


@pytest.mark.trio
async def test_plaintext_only_dialer_cannot_connect(start_hosts):
    key_pair = create_new_key_pair()
    plaintext = new_host(key_pair=key_pair, sec_opt={PLAINTEXT_PROTOCOL_ID: InsecureTransport(key_pair)})
    with trio.fail_after(20):
        async with start_hosts(1) as (a,), plaintext.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
            with pytest.raises(BaseException):  # noqa: B017 - libp2p wraps the refusal in exception groups
                await plaintext.connect(info_from_p2p_addr(multiaddr.Multiaddr(a.addrs()[0])))
            assert not a.is_connected(plaintext.get_id())
            assert not plaintext.get_network().connections.get(a.peer_id)


@pytest.mark.trio
async def test_unreachable_peer_raises_network_error_naming_it(start_hosts):
    with trio.fail_after(20):
        async with start_hosts(1, connect_timeout=2.0) as (a,):
            other = peer_id_of(create_new_key_pair())
            with pytest.raises(NetworkError, match=str(other)):
                await a.connect(other, ["/ip4/127.0.0.1/tcp/1"])


def test_libp2p_warnings_reach_the_node_log_but_not_a_closed_dht_stream(caplog):
    quiet_libp2p_logging()
    dht = logging.getLogger("libp2p.kad_dht.kad_dht")
    with caplog.at_level(logging.WARNING):
        dht.warning("Failed to read DHT message from stream: %s", "")  # the peer closed it: noise
        dht.warning("Failed to read DHT message from stream: %s", "invalid varint")
    assert [r.getMessage() for r in caplog.records] == [
        "Failed to read DHT message from stream: invalid varint"
    ]


def test_a_dial_that_found_no_listener_goes_to_the_node_log_not_the_terminal():
    """libp2p logs a refused dial as an ERROR, then raises it to the caller, which reports it."""
    quiet_libp2p_logging()
    tcp = logging.getLogger("libp2p.transport.tcp.tcp")
    seen: list[tuple[int, str]] = []
    terminal, log_file = logging.Handler(logging.WARNING), logging.Handler(logging.INFO)
    terminal.emit = lambda r: seen.append((logging.WARNING, r.getMessage()))
    log_file.emit = lambda r: seen.append((logging.INFO, r.getMessage()))
    root = logging.getLogger()
    root.addHandler(terminal)
    root.addHandler(log_file)
    try:
        tcp.error("Failed to open TCP stream: %s", "[Errno 111] Connect call failed")
        tcp.error("Unexpected error opening TCP stream: %s", "boom")
    finally:
        root.removeHandler(terminal)
        root.removeHandler(log_file)
    assert seen == [
        (logging.INFO, "Failed to open TCP stream: [Errno 111] Connect call failed"),
        (logging.WARNING, "Unexpected error opening TCP stream: boom"),
        (logging.INFO, "Unexpected error opening TCP stream: boom"),
    ]
