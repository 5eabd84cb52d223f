"""The simulated web served by child processes: same layout, request log read back from the children."""

from __future__ import annotations

import httpx
import pytest

from simnet.web import Fault, FaultPlan, serve_web_in_subprocess


@pytest.mark.slow
def test_two_workers_share_the_port_and_both_logs_come_back():
    plan = FaultPlan([Fault("server_error", host="sqlite")])
    with serve_web_in_subprocess("fixture", faults=plan, workers=2) as web:
        for _ in range(20):  # a new connection each time, so the kernel spreads them over the workers
            with httpx.Client() as client:
                assert client.get(web.site_url("python")).status_code == 200
                assert client.get(web.site_url("sqlite")).status_code == 503
        live = web.fetch_request_log()
        assert len(live) == 40
    final = web.request_log
    assert len(final) == 40
    assert [r.start for r in final] == sorted(r.start for r in final)
    assert {r.fault for r in final if r.site == "sqlite"} == {"server_error"}
    assert {r.host for r in final} == {web.host_of_site("python"), web.host_of_site("sqlite")}


def test_subprocess_web_answers_like_the_in_process_one():
    with serve_web_in_subprocess("fixture") as web, httpx.Client() as client:
        hub = client.get(web.hub_url)
        assert hub.status_code == 200 and web.site_url("gnuplot") in hub.text
        assert web.label_of(web.site_url("gnuplot")) == "math"
    assert [r.path for r in web.request_log] == ["/"]


def test_parent_and_server_process_agree_on_injected_cross_links():
    with serve_web_in_subprocess("fixture", cross_links=4, seed=7) as web, httpx.Client() as client:
        assert len(web.cross_links) == 4
        for source, target in web.cross_links:
            assert f'href="{target}"' in client.get(source).text


def test_the_server_process_serves_sitemaps_when_asked():
    with serve_web_in_subprocess("fixture", sitemaps=True) as web, httpx.Client() as client:
        assert web.sitemaps
        robots = client.get(web.base_url("sqlite") + "/robots.txt").text
        assert f"Sitemap: {web.base_url('sqlite')}/sitemap.xml" in robots
        assert client.get(web.base_url("sqlite") + "/sitemap.xml").status_code == 200
    with serve_web_in_subprocess("fixture") as web, httpx.Client() as client:
        assert client.get(web.base_url("sqlite") + "/sitemap.xml").status_code == 404


def test_the_server_process_serves_feeds_when_asked():
    with serve_web_in_subprocess("fixture", feeds=True) as web, httpx.Client() as client:
        assert web.feeds
        assert "/feed.xml" in client.get(web.site_url("sqlite")).text
        assert client.get(web.base_url("sqlite") + "/feed.xml").status_code == 200
