"""The request log lets tests judge a client's manners from the server's side; ports are shared safely."""

from __future__ import annotations

import errno
import socket

import httpx
import pytest
import trio

from node.cli import main as cli_main
from simnet.web import Fault, FaultPlan, PortError, load_web, serve_web
from simnet.web import server as web_server
from simnet.web.layout import RequestRecord
from simnet.web.manners import disallowed_requests, peak_in_flight, start_gaps, too_close

WEB = load_web("fixture")


@pytest.mark.trio
async def test_log_shows_concurrency_and_gaps_per_host():
    slow = FaultPlan([Fault("slow", host="python", delay=0.2)])
    async with serve_web(WEB, slow) as web, httpx.AsyncClient() as client:
        async with trio.open_nursery() as nursery:
            for page in ("/about.html", "/bugs.html", "/copyright.html"):
                nursery.start_soon(client.get, web.base_url("python") + page)
        for _ in range(2):
            await client.get(web.site_url("sqlite"))
            await trio.sleep(0.1)
        log = list(web.request_log)
    python, sqlite = web.host_of_site("python"), web.host_of_site("sqlite")
    assert peak_in_flight(log) == {python: 3, sqlite: 1}
    assert start_gaps(log)[sqlite][0] >= 0.1
    assert {host for host, _ in too_close(log, min_gap=0.1)} == {python}


def test_disallowed_requests_are_those_under_a_robots_disallow():
    plan = FaultPlan([Fault("robots", host="python", path_prefix="/tutorial/")])

    def record(site: str, path: str) -> RequestRecord:
        return RequestRecord(0.0, 0.1, "h", path, 200, None, site)

    log = [
        record("python", "/tutorial/x.html"),
        record("python", "/about.html"),
        record("sqlite", "/tutorial/"),
    ]
    assert disallowed_requests(log, plan) == [log[0]]


@pytest.mark.trio
async def test_two_webs_run_side_by_side_on_different_ports():
    async with serve_web(WEB) as one, serve_web(WEB) as two:
        assert one.port != two.port
        with pytest.raises(PortError, match="in use"):
            async with serve_web(WEB, port=one.port):
                pass


@pytest.mark.trio
async def test_a_port_taken_on_one_site_address_is_retried(monkeypatch):
    calls = []
    original = web_server.open_listening_socket

    def flaky(address: str, port: int, reuse_port: bool) -> socket.socket:
        calls.append(address)
        if len(calls) == 2:  # the first site address collides once
            raise OSError(errno.EADDRINUSE, "Address already in use")
        return original(address, port, reuse_port)

    monkeypatch.setattr(web_server, "open_listening_socket", flaky)
    async with serve_web(WEB) as web, httpx.AsyncClient() as client:
        assert (await client.get(web.site_url("python"))).status_code == 200
    assert len(calls) == 2 + 1 + len(WEB.sites)


def test_simweb_cli_reports_an_unknown_web_in_one_line(capsys):
    assert cli_main(["simweb", "serve", "--web", "/no/such/web"]) == 2
    assert "sites.tsv" in capsys.readouterr().err
    assert cli_main(["simweb", "serve", "--fault", "meltdown:python"]) == 2
    assert "unknown fault kind" in capsys.readouterr().err
