"""How the hosts' gossipsub router is configured: what py-libp2p would otherwise do on its own."""

from __future__ import annotations

import pytest
import trio

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see conftest


@pytest.mark.trio
async def test_heartbeat_and_mesh_bounds_stay_as_configured_when_the_mesh_is_thin(start_hosts):
    """py-libp2p's adaptive gossip turned a 1 s heartbeat into 60 s on nodes with a thin mesh."""
    with trio.fail_after(30):
        async with start_hosts(1, gossip_heartbeat=1, gossip_degree=6) as (host,):
            await host.pubsub.subscribe("t")  # a topic with no mesh peer: the poorest health there is
            router = host.gossipsub
            router.last_health_update = 0  # its health is re-scored at most every 30 s
            router.network_health_score = 0.1
            router._update_network_health()
            router._adapt_gossip_parameters()
            assert router.heartbeat_interval == 1
            assert (router.adaptive_degree_low, router.adaptive_degree_high) == (4, 12)
