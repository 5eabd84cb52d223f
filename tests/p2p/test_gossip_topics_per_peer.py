"""A node holding more than a hundred topic communities: its neighbours' routers note every one of them
(py-libp2p ignored a peer's gossip topics past its 100th, so those communities never formed)."""

from __future__ import annotations

import pytest
import trio

from p2p.communities import gossip_topic

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


@pytest.mark.trio
async def test_every_one_of_150_topics_a_peer_holds_is_known_to_its_neighbour(start_hosts):
    keys = [f"Topic {i:03d}" for i in range(150)]
    with trio.fail_after(60):
        async with start_hosts(2) as (a, b):
            for key in keys:
                await a.pubsub.subscribe(gossip_topic(key))
            await b.connect_addr(a.addrs()[0])

            def noted() -> int:
                return sum(a.host.get_id() in b.pubsub.peer_topics.get(gossip_topic(k), ()) for k in keys)

            while noted() < len(keys):  # stuck at 100 before
                await trio.sleep(0.1)
            assert len(b.pubsub.peer_topics) >= 150
