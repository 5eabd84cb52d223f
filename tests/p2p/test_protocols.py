from __future__ import annotations

import contextlib
import dataclasses

import pytest
import trio
from libp2p.custom_types import TProtocol

from p2p.codec import decode_frame, read_frame
from p2p.limits import OutboundPacer, RateLimiter
from p2p.messages.envelope import Reject
from p2p.messages.models import SignedModel
from p2p.messages.results import CrawlResult
from p2p.protocols import MAX_HANDLERS_PER_PEER, MODEL, ProtocolError, Protocols, ResultPage
from p2p.signing import sign_model
from p2p.wire_testing import sample_model, wire_key

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


def results(origin: str, start: int, count: int) -> list[CrawlResult]:
    return [
        CrawlResult(
            url=f"http://127.0.0.3:8080/docs/page{n}.html",
            title=f"Page {n}",
            preview="PostgreSQL is an object-relational database",
            topic="databases",
            confidence=0.5,
            fingerprint=f"{n:016x}",
            origin=origin,
            fetched_at=1_700_000_000.0 + n,
        )
        for n in range(start, start + count)
    ]


@pytest.mark.trio
async def test_result_sync_transfers_exactly_the_new_items_and_resumes_from_its_cursor(start_services):
    with trio.fail_after(40):
        async with start_services(2) as (a, b):
            a.add_results("databases", results(a.peer_id, 0, 3))
            first, cursor = await b.sync_results(a.peer_id, "databases", 0)
            assert [r.url for r in first] == [r.url for r in results(a.peer_id, 0, 3)]
            a.add_results("databases", results(a.peer_id, 3, 2))
            second, cursor = await b.sync_results(a.peer_id, "databases", cursor)
            assert [r.fingerprint for r in second] == [f"{n:016x}" for n in (3, 4)]
            third, same = await b.sync_results(a.peer_id, "databases", cursor)
            assert third == [] and same == cursor


@pytest.mark.trio
async def test_result_sync_pages_through_more_than_one_response(start_services):
    with trio.fail_after(40):
        async with start_services(2) as (a, b):
            a.add_results("databases", results(a.peer_id, 0, 1203))
            items, cursor = await b.sync_results(a.peer_id, "databases", 0)
            assert len({r.url for r in items}) == 1203 and cursor == 1203


@pytest.mark.trio
async def test_garbage_request_is_rejected_counted_and_the_host_keeps_serving(start_hosts):
    with trio.fail_after(30):
        async with start_hosts(3) as (a, bad, honest):
            server, model = serving_own_model(a)
            await bad.connect_addr(a.addrs()[0])
            stream = await bad.host.new_stream(a.peer_id, [TProtocol(MODEL)])
            await stream.write(b"\x00\x00\x00\x05\xc1\xc1\xc1\xc1\xc1")  # 0xc1 is never valid msgpack
            reply = decode_frame(await read_frame(stream, Reject.MAX_FRAME))
            await stream.close()
            assert isinstance(reply, Reject) and reply.reason == "malformed_msgpack"
            record = server.guard.ledger.record_of(str(bad.peer_id))
            assert record is not None and record.reasons["malformed_msgpack"] == 1
            await honest.connect_addr(a.addrs()[0])
            fetched = await Protocols(honest).fetch_model(a.peer_id, "databases")
            assert fetched == model


@pytest.mark.trio
async def test_one_peer_holding_streams_open_cannot_take_the_slots_other_peers_need(start_hosts):
    with trio.fail_after(30):
        async with start_hosts(3, requests_per_second=100.0, request_burst=100) as (a, bad, honest):
            server, model = serving_own_model(a)
            await bad.connect_addr(a.addrs()[0])
            held = []
            for _ in range(MAX_HANDLERS_PER_PEER + 3):
                with contextlib.suppress(Exception):  # the node resets the streams past the bound
                    stream = await bad.host.new_stream(a.peer_id, [TProtocol(MODEL)])
                    await stream.write(b"\x00")  # a byte of a frame header, then nothing: the exchange waits
                    held.append(stream)
            with trio.move_on_after(2):
                while server.guard.ledger.record_of(str(bad.peer_id)) is None:
                    await trio.sleep(0.05)
            assert server.guard.ledger.record_of(str(bad.peer_id)).reasons["rate_limited"] >= 1
            assert sum(server._running.values()) <= MAX_HANDLERS_PER_PEER
            await honest.connect_addr(a.addrs()[0])
            assert await Protocols(honest).fetch_model(a.peer_id, "databases") == model
            for stream in held:
                with contextlib.suppress(Exception):
                    await stream.reset()


@pytest.mark.trio
async def test_model_with_a_bad_signature_is_refused_and_counted_against_the_server(start_hosts):
    with trio.fail_after(30):
        async with start_hosts(2) as (a, b):
            server = Protocols(a)
            genuine = sign_model(wire_key(1), sample_model(wire_key(1), "databases"))
            forged = SignedModel(genuine.payload, bytes(64))

            async def provide(topic, version):
                return forged

            server.serve_models(provide)
            await b.connect_addr(a.addrs()[0])
            client = Protocols(b)
            with pytest.raises(ProtocolError, match="bad_signature"):
                await client.fetch_model(a.peer_id, "databases")
            assert client.guard.ledger.record_of(str(a.peer_id)).reasons["bad_signature"] == 1


@pytest.mark.trio
async def test_requests_above_the_rate_limit_are_refused(start_hosts):
    with trio.fail_after(30):
        async with start_hosts(2, requests_per_second=0.1, request_burst=2) as (a, b):
            server = serving_no_results(a)
            await b.connect_addr(a.addrs()[0])
            client = Protocols(b)
            client.pacer = OutboundPacer(100.0, 100, 4)  # a peer not pacing itself as nodes do
            for _ in range(2):
                await client.fetch_results(a.peer_id, "databases")
            with pytest.raises(ProtocolError, match="rate_limited"):
                await client.fetch_results(a.peer_id, "databases")
            assert server.guard.ledger.record_of(str(b.peer_id)).reasons["rate_limited"] == 1


@pytest.mark.trio
async def test_a_node_pulling_many_models_at_once_paces_itself_and_is_not_refused(start_hosts):
    """A node with 150 topics pulled its peer's 150 models at once: both ends counted rate violations and
    two honest nodes banned each other. Here 3 bursts' worth of requests, all at once, on loopback."""
    with trio.fail_after(60):
        async with start_hosts(2, requests_per_second=20.0, request_burst=10) as (a, b):
            server, model = serving_own_model(a)
            await b.connect_addr(a.addrs()[0])
            client = Protocols(b)
            fetched = []

            async def fetch() -> None:
                fetched.append(await client.fetch_model(a.peer_id, "databases"))

            async with trio.open_nursery() as nursery:
                for _ in range(30):
                    nursery.start_soon(fetch)
            assert fetched == [model] * 30
            assert server.guard.ledger.record_of(str(b.peer_id)) is None  # no violation counted


@pytest.mark.trio
async def test_the_replies_to_a_nodes_own_requests_are_not_charged_to_the_peer_that_answers(start_hosts):
    """Pulling many announced models from an honest peer charged its answers to its rate limit, and the
    node banned the peer for answering."""
    with trio.fail_after(30):
        async with start_hosts(2, requests_per_second=0.1, request_burst=2) as (a, b):
            serving_no_results(a)
            await b.connect_addr(a.addrs()[0])
            client = Protocols(b)
            client.guard.limiter = RateLimiter(rate=0.1, burst=1)  # b lets a send one frame unasked
            await client.fetch_results(a.peer_id, "databases")
            await client.fetch_results(a.peer_id, "databases")  # b asked twice: a answered twice
            assert client.guard.ledger.record_of(str(a.peer_id)) is None  # a owes b nothing
            assert not client.guard.ledger.is_banned(str(a.peer_id))


def serving_no_results(host) -> Protocols:
    """`host`'s protocols answering every result sync with an empty page."""
    server = Protocols(host)

    async def provide(topic, cursor, limit):
        return ResultPage((), cursor)

    server.serve_results(provide)
    return server


def serving_own_model(host) -> tuple[Protocols, SignedModel]:
    """`host`'s protocols answering every model request with its own signed model."""
    server = Protocols(host)
    model = sign_model(host.host.get_private_key(), sample_model(_named(host), "databases"))

    async def provide(topic, version):
        return model

    server.serve_models(provide)
    return server, model


def _named(host):
    return dataclasses.make_dataclass("Named", [("peer_id", str)])(str(host.peer_id))
