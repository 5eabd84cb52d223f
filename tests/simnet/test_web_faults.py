"""Every injectable fault of the simulated web is observable with a plain HTTP client, per host or path."""

from __future__ import annotations

import zlib

import httpx
import pytest
import trio

from simnet.web import Fault, FaultPlan, FaultSpecError, load_web, parse_fault, serve_web

WEB = load_web("fixture")
PAGE = "/about.html"  # a python page of the fixture


def served(*faults: Fault):
    return serve_web(WEB, faults=FaultPlan(faults))


@pytest.mark.trio
async def test_slow_delays_only_the_faulted_host():
    async with served(Fault("slow", host="python", delay=0.3)) as web, httpx.AsyncClient() as client:
        await client.get(web.base_url("python") + PAGE)
        await client.get(web.site_url("sqlite"))
        by_site = {r.site: r for r in web.request_log}
        assert by_site["python"].end - by_site["python"].start >= 0.3
        assert by_site["python"].fault == "slow" and by_site["sqlite"].fault is None


@pytest.mark.trio
async def test_server_error_applies_under_its_path_prefix_only():
    fault = Fault("server_error", host="python", path_prefix="/tutorial/", status=502)
    async with served(fault) as web, httpx.AsyncClient() as client:
        assert (await client.get(web.base_url("python") + "/tutorial/index.html")).status_code == 502
        assert (await client.get(web.base_url("python") + PAGE)).status_code == 200


@pytest.mark.trio
async def test_reset_aborts_the_connection():
    async with served(Fault("reset", host="python")) as web, httpx.AsyncClient() as client:
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
            await client.get(web.base_url("python") + PAGE)
        assert web.request_log[-1].status == 0 and web.request_log[-1].fault == "reset"


@pytest.mark.trio
async def test_truncated_body_is_shorter_than_its_content_length():
    async with served(Fault("truncated", host="python")) as web, httpx.AsyncClient() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(web.base_url("python") + PAGE)
        async with client.stream("GET", web.base_url("python") + PAGE) as response:
            declared = int(response.headers["content-length"])
            received = b""
            with pytest.raises(httpx.RemoteProtocolError):
                async for chunk in response.aiter_raw():
                    received += chunk
        assert 0 < len(received) < declared


@pytest.mark.trio
async def test_huge_page_declares_and_streams_its_size():
    async with served(Fault("huge", host="python", size=3_000_000)) as web, httpx.AsyncClient() as client:
        response = await client.get(web.base_url("python") + PAGE)
        assert int(response.headers["content-length"]) == len(response.content) == 3_000_000
        assert response.headers["content-type"] == "text/html"


@pytest.mark.trio
async def test_gzip_bomb_inflates_far_beyond_its_size():
    async with (
        served(Fault("gzip_bomb", host="python", size=50_000_000)) as web,
        httpx.AsyncClient() as client,
    ):
        async with client.stream("GET", web.base_url("python") + PAGE) as response:
            assert response.headers["content-encoding"] == "gzip"
            raw = b"".join([chunk async for chunk in response.aiter_raw()])
        inflated = zlib.decompress(raw, 31)
        assert len(inflated) == 50_000_000 and len(raw) * 100 < len(inflated)


@pytest.mark.trio
async def test_redirect_loop_never_reaches_a_page():
    async with (
        served(Fault("redirect_loop", host="python")) as web,
        httpx.AsyncClient(max_redirects=5) as client,
    ):
        with pytest.raises(httpx.TooManyRedirects):
            await client.get(web.base_url("python") + PAGE, follow_redirects=True)
        locations = {r.path for r in web.request_log}
        assert locations == {PAGE, PAGE + "?loop=1"}


@pytest.mark.trio
async def test_trap_pages_link_to_ever_new_urls_and_are_linked_from_the_host():
    async with served(Fault("trap", host="python")) as web, httpx.AsyncClient() as client:
        base = web.base_url("python")
        assert '/calendar/2024/01/"' in (await client.get(base + PAGE)).text
        assert "/calendar/" not in (await client.get(web.site_url("sqlite"))).text
        seen, url = set(), base + "/calendar/2024/01/"
        for _ in range(30):
            page = (await client.get(url)).text
            seen.add(url)
            url = base + page.split('">previous month')[0].rsplit('href="', 1)[1]
        assert len(seen) == 30 and all(web.label_of(u) == "programming" for u in seen)


@pytest.mark.trio
async def test_wrong_type_serves_html_as_binary():
    async with served(Fault("wrong_type", host="python")) as web, httpx.AsyncClient() as client:
        response = await client.get(web.base_url("python") + PAGE)
        assert response.headers["content-type"] == "application/octet-stream"
        assert b"<html" in response.content.lower()


@pytest.mark.trio
async def test_binary_as_html_serves_junk_labelled_html():
    async with served(Fault("binary_as_html", host="python")) as web, httpx.AsyncClient() as client:
        response = await client.get(web.base_url("python") + PAGE)
        assert response.headers["content-type"] == "text/html"
        assert b"<html" not in response.content.lower()
        with pytest.raises(UnicodeDecodeError):
            response.content.decode("utf-8")


@pytest.mark.trio
async def test_robots_disallow_and_crawl_delay_only_on_the_faulted_host():
    fault = Fault("robots", host="python", path_prefix="/tutorial/", crawl_delay=1.5)
    async with served(fault) as web, httpx.AsyncClient() as client:
        robots = (await client.get(web.base_url("python") + "/robots.txt")).text
        assert "Disallow: /tutorial/" in robots and "Crawl-delay: 1.5" in robots
        other = (await client.get(web.base_url("sqlite") + "/robots.txt")).text
        assert other == "User-agent: *\nDisallow:\n"
        assert web.faults.disallowed_prefixes("python") == ("/tutorial/",)


@pytest.mark.trio
async def test_robots_with_only_a_crawl_delay_allows_everything():
    async with served(Fault("robots", host="python", crawl_delay=2)) as web, httpx.AsyncClient() as client:
        robots = (await client.get(web.base_url("python") + "/robots.txt")).text
        assert robots == "User-agent: *\nDisallow:\nCrawl-delay: 2\n"
        assert web.faults.disallowed_prefixes("python") == ()
    whole = FaultPlan([Fault("robots", host="python")])
    assert whole.disallowed_prefixes("python") == ("/",)


@pytest.mark.trio
@pytest.mark.parametrize(("kind", "status"), [("robots_5xx", 503), ("robots_429", 429)])
async def test_robots_errors(kind, status):
    async with served(Fault(kind, host="python")) as web, httpx.AsyncClient() as client:
        assert (await client.get(web.base_url("python") + "/robots.txt")).status_code == status
        assert (await client.get(web.base_url("python") + PAGE)).status_code == 200


@pytest.mark.trio
async def test_faults_never_touch_the_hub():
    async with served(Fault("server_error"), Fault("robots_5xx")) as web, httpx.AsyncClient() as client:
        assert (await client.get(web.hub_url)).status_code == 200
        assert (await client.get(web.hub_url + "robots.txt")).status_code == 200
        assert (await client.get(web.site_url("gnuplot"))).status_code == 503


def test_fault_specs_parse_from_the_command_line_form():
    assert parse_fault("slow:python,delay=0.5") == Fault("slow", host="python", delay=0.5)
    assert parse_fault("robots:sqlite:/c3ref/,crawl_delay=2") == Fault(
        "robots", host="sqlite", path_prefix="/c3ref/", crawl_delay=2.0
    )
    assert parse_fault("server_error:*") == Fault("server_error")
    with pytest.raises(FaultSpecError):
        parse_fault("explode:python")
    with pytest.raises(FaultSpecError):
        parse_fault("slow:python,speed=3")


def test_fault_plans_round_trip_as_plain_data():
    plan = FaultPlan(
        [Fault("slow", host="a", delay=1.0), Fault("robots", path_prefix="/x/", crawl_delay=2.0)]
    )
    assert FaultPlan.from_list(plan.to_list()) == plan


@pytest.mark.trio
async def test_faults_are_served_concurrently_with_normal_pages():
    slow = Fault("slow", host="python", delay=5)
    async with served(slow) as web, httpx.AsyncClient() as client, trio.open_nursery() as nursery:
        nursery.start_soon(client.get, web.base_url("python") + PAGE)
        with trio.fail_after(2):
            assert (await client.get(web.site_url("sqlite"))).status_code == 200
        nursery.cancel_scope.cancel()
