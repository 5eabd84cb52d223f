"""Relayed models on real hosts: a member serves a model it received to others, a request for a version
not heard of starts a pull, and a relay that serves a wrong-origin, forged or stale model is rejected,
counted against it and not asked again, while the fetcher gets the model elsewhere and keeps serving."""

from __future__ import annotations

import pytest
import trio

from p2p.messages.models import ModelRequest, ModelResponse, SignedModel
from p2p.protocols import MODEL
from p2p.signing import sign_model
from p2p.wire_testing import own_model, wait_until

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest

TOPIC = "databases"


def model_of(node, version: int = 1):
    return own_model(node, TOPIC, version)


@pytest.mark.trio
@pytest.mark.slow
async def test_a_request_for_an_unheard_version_starts_a_pull_and_the_node_then_relays_it(start_services):
    with trio.fail_after(60):
        async with start_services(3, dht_enabled=False, fetch_ask_gap=0.1) as (relay, origin, third):
            await relay.hold_topic(TOPIC)
            origin.own_models[TOPIC] = {1: sign_model(origin.key, model_of(origin))}  # not announced
            await wait_until(lambda: origin.p2p.is_connected(relay.p2p.peer_id))
            answer = await origin.protocols.fetch_model(relay.peer_id, TOPIC, 1, origin=origin.peer_id)
            assert answer is None
            await wait_until(lambda: (TOPIC, origin.peer_id) in relay.received)
            assert relay.spread.heard_from_request == 1
            assert relay.spread.suppliers[(TOPIC, origin.peer_id)] == origin.peer_id
            relayed = await third.protocols.fetch_model(relay.peer_id, TOPIC, 1, origin=origin.peer_id)
            assert relayed == origin.own_models[TOPIC][1]
            assert relay.spread.uploads == 1 and relay.spread.heard_from_request == 1


def hostile_answer(kind: str, origin, liar):
    """A model handler that answers every request with a bad model of `kind`."""
    genuine = model_of(origin, version=2)
    bad = {
        "wrong_origin": sign_model(liar.key, model_of(liar, version=2)),
        "bad_signature": SignedModel(genuine, bytes(64)),
        "bad_value": sign_model(origin.key, model_of(origin, version=1)),  # a stale version
    }[kind]
    asked: list[ModelRequest] = []

    async def answer(peer: str, request: ModelRequest):
        asked.append(request)
        return [ModelResponse(request.topic, bad)]

    return answer, asked


@pytest.mark.trio
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["wrong_origin", "bad_signature", "bad_value"])
async def test_a_relay_serving_a_bad_model_is_rejected_counted_and_not_asked_again(start_services, kind):
    with trio.fail_after(90):
        async with start_services(
            4, dht_enabled=False, fetch_ask_gap=0.1, fetch_retry_delay=0.2, model_uploads_per_window=10
        ) as (origin, liar, fetcher, bystander):
            answer, asked = hostile_answer(kind, origin, liar)
            liar.protocols.serve(MODEL, ModelRequest, answer)

            async def serve_once_the_liar_was_asked(topic, version):
                if not asked:  # whichever the fetcher asks first, it has to ask the liar
                    return None
                return await origin._stored_model(topic, version)

            origin.set_model_provider(serve_once_the_liar_was_asked)
            for node in (origin, liar, fetcher):
                await node.hold_topic(TOPIC)
            await wait_until(
                lambda: (
                    {origin.peer_id, liar.peer_id} <= set(fetcher.communities.community(TOPIC))
                    and all(fetcher.p2p.is_connected(n.p2p.peer_id) for n in (origin, liar))
                )
            )
            signed = await origin.publish_model(TOPIC, model_of(origin, version=2))
            await wait_until(lambda: fetcher.received.get((TOPIC, origin.peer_id)) == signed)
            assert fetcher.spread.suppliers[(TOPIC, origin.peer_id)] == origin.peer_id
            assert asked == [ModelRequest(TOPIC, 2, origin.peer_id)]  # once, and never again
            record = fetcher.protocols.guard.ledger.record_of(liar.peer_id)
            assert record is not None and record.reasons[kind] == 1
            assert fetcher.spread.failures[kind] == record.reasons[kind]
            assert not fetcher.protocols.guard.ledger.is_banned(liar.peer_id)
            relayed = await bystander.protocols.fetch_model(fetcher.peer_id, TOPIC, 2, origin=origin.peer_id)
            assert relayed == signed  # the fetcher keeps serving honest peers


@pytest.mark.trio
async def test_pulls_past_a_models_cap_are_answered_busy_while_other_models_and_direct_requests_are_served(
    start_services,
):
    from p2p.protocols import Refused

    with trio.fail_after(30):
        async with start_services(2, dht_enabled=False, model_uploads_per_window=1) as (origin, asker):
            signed = sign_model(origin.key, model_of(origin))
            origin.own_models[TOPIC] = {1: signed}
            await wait_until(lambda: asker.p2p.is_connected(origin.p2p.peer_id))
            assert (
                await asker.protocols.fetch_model(origin.peer_id, TOPIC, 1, origin=origin.peer_id) == signed
            )
            with pytest.raises(Refused) as refused:
                await asker.protocols.fetch_model(origin.peer_id, TOPIC, 1, origin=origin.peer_id)
            assert refused.value.reason == "busy" and origin.spread.busy_refusals == 1
            other = sign_model(origin.key, own_model(origin, "other/topic"))
            origin.own_models["other/topic"] = {1: other}
            served = await asker.protocols.fetch_model(
                origin.peer_id, "other/topic", 1, origin=origin.peer_id
            )
            assert served == other  # each model has its own cap
            assert await asker.protocols.fetch_model(origin.peer_id, TOPIC) == signed  # schema 1: uncapped
            assert asker.protocols.guard.ledger.record_of(origin.peer_id) is None  # busy is no violation
