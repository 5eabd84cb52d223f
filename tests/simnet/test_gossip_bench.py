"""The gossip benchmark (simnet.bench.gossip) measures the service's own dissemination: its tree depth,
its scaled background load, and a small run end to end."""

import gc

import pytest
import trio

from simnet.bench.gossip import CORE_HOSTS, BenchConfig, bench_reannounce_rate, hops_of, run

CONFIG = BenchConfig(
    fanout=2,
    nonzero=50,
    training_docs=5,
    exchange_period=1.0,
    gossip_heartbeat=1,
    gossip_degree=3,
    reannounce_rate=1.0,
    retry_delay=0.5,
    dial_patience=2.0,
    ask_gap=0.2,
    fanout_window=5.0,
)


def test_a_peers_round_is_its_depth_in_the_supply_tree():
    suppliers = {"origin": None, "a": "origin", "b": "origin", "c": "a", "d": "c"}
    assert hops_of(suppliers) == {"origin": 0, "a": 1, "b": 1, "c": 2, "d": 3}


def test_the_background_rate_is_the_nodes_up_to_core_hosts_then_scaled_down():
    assert bench_reannounce_rate(CORE_HOSTS, 1.0) == 1.0
    assert bench_reannounce_rate(5, 1.0) == 1.0
    assert bench_reannounce_rate(10 * CORE_HOSTS, 1.0) == pytest.approx(0.1)
    assert bench_reannounce_rate(100, 1.0) * 100 == pytest.approx(CORE_HOSTS)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # py-libp2p's leaked sockets
def test_a_small_community_gets_the_model_through_the_services_own_pull():
    result = trio.run(run, 6, CONFIG, 120.0)
    assert result["peers"] == 6
    assert 1 <= result["rounds_to_all"] <= 5
    assert result["max_uploads_by_one_peer"] <= 2 * (1 + result["seconds_to_all"] // CONFIG.fanout_window)
    assert result["model_requests"] >= 5  # one request at least per peer that got the model
    gc.collect()  # collect py-libp2p's leaked dial sockets here, under this test's warning filter
