"""The soak scenario: drift is measured once the crawls ended, and a short soak runs real nodes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from node.cli.demo import BOOKMARKS
from simnet.scenarios.soak import drift_per_hour, node_figures


def sample(t: float, rss: float, crawling: bool = False, cpu: float = 0.0) -> dict:
    return {
        "t": t,
        "cpu_s": cpu,
        "pages": 10,
        "crawling": crawling,
        "pooled": 1,
        "rss_mb": rss,
        "fds": 30,
        "threads": 5,
        "db_mb": 1.0,
        "api_ms": 3.0,
    }


def test_drift_compares_the_medians_of_the_two_halves_per_hour():
    times = [0.0, 600.0, 1200.0, 1800.0]
    assert drift_per_hour(times, [100.0, 100.0, 110.0, 110.0]) == pytest.approx(10.0 / (1500 - 300) * 3600)
    assert drift_per_hour(times, [100.0, 140.0, 100.0, 140.0]) == pytest.approx(0.0)  # swings, no drift
    assert drift_per_hour(times[:3], [100.0, 200.0, 300.0]) is None


def test_drift_leaves_out_the_samples_taken_while_crawling():
    crawl = [sample(t, 100.0 + t, crawling=True) for t in (0.0, 30.0)]
    settled = [sample(t, rss) for t, rss in ((60.0, 400.0), (90.0, 430.0), (120.0, 400.0), (150.0, 430.0))]
    figures = node_figures(crawl + settled, settled_from=60.0)
    assert figures["settled_samples"] == 4
    assert figures["rss_drift_mb_per_h"] == pytest.approx(0.0, abs=1e-6)
    assert figures["rss_mb"] == {"first": 100.0, "last": 430.0, "max": 430.0}
    assert node_figures(crawl, settled_from=None)["rss_drift_mb_per_h"] is None  # the crawl never ended


def test_settled_cpu_is_the_share_of_a_core_used_once_the_crawls_ended():
    crawl = [sample(0.0, 100.0, crawling=True, cpu=0.0), sample(30.0, 100.0, crawling=True, cpu=25.0)]
    settled = [sample(t, 100.0, cpu=cpu) for t, cpu in ((60.0, 50.0), (90.0, 51.5), (120.0, 53.0))]
    assert node_figures(crawl + settled, settled_from=60.0)["settled_cpu_percent"] == 5.0
    assert node_figures(crawl + settled[:1], settled_from=60.0)["settled_cpu_percent"] is None


@pytest.mark.slow
def test_a_short_soak_samples_every_node_and_stops_them_cleanly(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "simnet.scenarios.soak",
            "--web",
            "fixture",
            "--bookmarks",
            str(BOOKMARKS),
            "--nodes",
            "2",
            "--pages",
            "40",
            "--minutes",
            "0.5",
            "--every",
            "5",
            "--use-every",
            "2",
            "--keep",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["samples"] >= 3
    for node in result["nodes"]:
        assert node["pages"] >= 40
        assert node["exit_code"] == 0  # SIGTERM after the soak: a clean shutdown
        assert node["rss_mb"]["max"] >= node["rss_mb"]["first"] > 0
        assert node["fds"]["last"] > 0 and node["api_ms"]["max"] > 0
        assert "settled_cpu_percent" in node
    assert not list(tmp_path.glob("node*/api.json"))  # every node stopped
