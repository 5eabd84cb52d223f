"""What a host tells others to dial: never 0.0.0.0 or ::, which would lead another machine to itself."""

from __future__ import annotations

import ipaddress

import pytest

from p2p import addresses
from p2p.addresses import advertised, check_listen_addr, check_peer_addr, interface_addresses
from p2p.message_limits import MAX_ADDRS_PER_PEER
from p2p.signing import peer_id_from_public_key as peer_id_of

MACHINE = {"ip4": ["192.0.2.7", "10.1.2.3"], "ip6": ["2001:db8::7"]}


def test_an_every_interface_address_becomes_the_machines_addresses_on_the_same_port():
    listen = ["/ip4/0.0.0.0/tcp/4001", "/ip6/::/tcp/4002"]
    assert advertised(listen, lambda: MACHINE) == [
        "/ip4/192.0.2.7/tcp/4001",
        "/ip4/10.1.2.3/tcp/4001",
        "/ip6/2001:db8::7/tcp/4002",
    ]


def test_specific_addresses_are_kept_and_the_machine_is_not_asked():
    def unasked() -> dict[str, list[str]]:
        raise AssertionError("interfaces asked without an every-interface address")

    listen = ["/ip4/127.0.0.1/tcp/4001", "/ip4/192.0.2.7/tcp/4001"]
    assert advertised(listen, unasked) == listen


def test_duplicates_go_a_family_without_addresses_is_dropped_and_the_list_is_bounded():
    listen = ["/ip4/192.0.2.7/tcp/4001", "/ip4/0.0.0.0/tcp/4001", "/ip6/::/tcp/4001"]
    assert advertised(listen, lambda: {"ip4": ["192.0.2.7"], "ip6": []}) == ["/ip4/192.0.2.7/tcp/4001"]
    many = {"ip4": [f"10.0.0.{i}" for i in range(1, 20)], "ip6": []}
    assert len(advertised(["/ip4/0.0.0.0/tcp/1"], lambda: many)) == MAX_ADDRS_PER_PEER


def test_this_machines_addresses_are_dialable_ones():
    found = interface_addresses()
    assert set(found) == {"ip4", "ip6"} and found["ip4"], (
        found
    )  # every machine here has IPv4, loopback at least
    for ips in found.values():
        parsed = [ipaddress.ip_address(ip) for ip in ips]
        assert not any(ip.is_unspecified or ip.is_link_local for ip in parsed)
        loopback = [ip.is_loopback for ip in parsed]
        assert all(loopback) or not any(loopback), ips  # loopback only where nothing else is there


@pytest.mark.trio
async def test_a_host_listening_on_every_interface_gives_no_unspecified_address(start_hosts, monkeypatch):
    import multiaddr

    async with start_hosts(1) as (host,):
        port = host.addrs()[0].split("/")[4]
        wildcard = multiaddr.Multiaddr(f"/ip4/0.0.0.0/tcp/{port}/p2p/{host.peer_id}")
        monkeypatch.setattr(host.host, "get_addrs", lambda: [wildcard])  # as libp2p reports 0.0.0.0
        monkeypatch.setattr(addresses, "interface_addresses", lambda: {"ip4": ["127.0.0.1"], "ip6": []})
        assert host.transport_addrs() == [f"/ip4/127.0.0.1/tcp/{port}"]
        assert host.addrs() == [f"/ip4/127.0.0.1/tcp/{port}/p2p/{host.peer_id}"]


@pytest.mark.parametrize("addr", ["/ip4/0.0.0.0/tcp/4001", "/ip4/127.0.0.1/tcp/0", "/ip6/::1/tcp/4001"])
def test_a_listen_address_is_an_ip_address_and_a_tcp_port(addr):
    assert check_listen_addr(addr) == addr


@pytest.mark.parametrize(
    "addr",
    [
        *["127.0.0.1:4001", "/ip4/127.0.0.1/tcp/x", "/ip4/::1/tcp/1", "/ip4/1.2.3/tcp/1"],
        *["/ip4/127.0.0.1/tcp/70000", "/ip4/127.0.0.1/tcp/1/p2p/12D3KooWX", "/dns4/example.org/tcp/4001"],
        "/ip4/127.0.0.1/udp/1",
    ],
)
def test_anything_else_given_to_listen_on_is_refused_with_the_form_to_give(addr):
    with pytest.raises(ValueError, match=r"give /ip4/HOST/tcp/PORT, e\.g\. /ip4/0\.0\.0\.0/tcp/4001"):
        check_listen_addr(addr)


PEER = peer_id_of(bytes(range(32)))


@pytest.mark.parametrize(
    "addr", [f"/ip4/127.0.0.1/tcp/4001/p2p/{PEER}", f"/dns4/example.org/tcp/1/p2p/{PEER}"]
)
def test_a_peer_address_ends_in_the_peer_id(addr):
    assert check_peer_addr(addr) == addr


@pytest.mark.parametrize(
    "addr",
    [
        *["/ip4/127.0.0.1/tcp/4001", "127.0.0.1:4001", "/ip4/127.0.0.1/tcp/1/p2p/", f"/p2p/{PEER}"],
        *["/ip4/127.0.0.1/tcp/1/p2p/12D3KooW", "/ip4/127.0.0.1/tcp/1/p2p/garbage"],
    ],
)
def test_a_peer_address_without_its_peer_id_is_refused_saying_where_to_find_one(addr):
    with pytest.raises(ValueError, match="PEER_ID another node's `node run` prints"):
        check_peer_addr(addr)
