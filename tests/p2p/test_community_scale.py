"""A community of ten real services on loopback: re-announcement gossip stays within the topic's budget, so
a new model reaches every member at once without a failed request, relayed by members past the origin's
upload cap.

Before re-announcements shared a per-topic budget, each of the ten members re-announced every 0.5 s: about
700 gossip deliveries a second saturated the process, multiselect on a new stream took seconds and the nine
concurrent model fetches from the announcer timed out.
"""

from __future__ import annotations

from collections import Counter
from types import SimpleNamespace

import pytest
import trio

from p2p.wire_testing import sample_model

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest

MEMBERS = 10
WINDOW = 4.0


def count_announcements(node, heard: Counter) -> None:
    forward = node.communities.on_announcement

    async def counting(announcement):
        heard[node.peer_id] += 1
        await forward(announcement)

    node.communities.on_announcement = counting


@pytest.mark.trio
@pytest.mark.slow
async def test_ten_member_community_stays_in_gossip_budget_and_a_model_reaches_all_through_relays(
    start_services,
):
    with trio.fail_after(120):
        async with start_services(MEMBERS, dht_enabled=False) as nodes:
            heard: Counter[str] = Counter()
            for node in nodes:
                count_announcements(node, heard)
                await node.hold_topic("x")
            await trio.sleep(3)  # first announcements and the gossip mesh settle
            heard.clear()
            await trio.sleep(WINDOW)
            settings = nodes[0].p2p.settings
            budget = 2 * settings.reannounce_rate_per_topic * WINDOW * (MEMBERS - 1)  # x2: jitter
            assert sum(heard.values()) <= budget, f"{sum(heard.values())} announcements heard in {WINDOW}s"

            payload = sample_model(SimpleNamespace(peer_id=nodes[0].peer_id), topic="x", version=1)
            signed = await nodes[0].publish_model("x", payload)
            key = ("x", nodes[0].peer_id)
            with trio.fail_after(60):
                while any(node.received.get(key) != signed for node in nodes[1:]):
                    await trio.sleep(0.1)
            failures = sum((node.spread.failures for node in nodes), Counter())
            assert not failures, f"model requests failed: {dict(failures)}"
            relayed = sum(node.spread.uploads for node in nodes[1:])
            assert nodes[0].spread.uploads + relayed == MEMBERS - 1
            assert relayed > 0  # the origin uploads to model_uploads_per_window members per window
            relays = {node.spread.suppliers[key] for node in nodes[1:]}
            assert relays - {nodes[0].peer_id}
