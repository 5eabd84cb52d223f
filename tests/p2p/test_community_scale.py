"""A community of ten real services on loopback: re-announcement gossip stays within the topic's budget, so
the announcer of a model still answers every member fetching it at once.

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
async def test_ten_member_community_stays_in_gossip_budget_and_announcer_serves_all_fetchers(start_services):
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
            fetched: list = []

            async def fetch(node):
                fetched.append(await node.protocols.fetch_model(nodes[0].peer_id, "x"))

            async with trio.open_nursery() as nursery:
                for node in nodes[1:]:
                    nursery.start_soon(fetch, node)
            assert fetched == [signed] * (MEMBERS - 1)
