"""The simulated web serves the fixture: hub, files, rewriting, labels and upstream mapping."""

from __future__ import annotations

import re

import httpx
import pytest
import trio

from simnet.web import load_web, serve_web


@pytest.fixture
def fixture_web():
    return load_web("fixture")


@pytest.mark.trio
async def test_each_site_is_served_on_its_own_loopback_address_with_one_port(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        hosts = {web.host_of_site(site) for site in fixture_web.sites}
        assert len(hosts) == len(fixture_web.sites)
        assert {host.rsplit(":", 1)[1] for host in hosts} == {str(web.port)}
        for site in fixture_web.sites:
            response = await client.get(web.site_url(site))
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/html")
            assert response.content == (site.root / site.entry).read_bytes() or b"127.0." in response.content


@pytest.mark.trio
async def test_hub_lists_every_entry_page_under_its_group(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        page = (await client.get(web.hub_url)).text
        for site in fixture_web.sites:
            section = page.split(f'<h2 id="{site.group}">')[1].split("</ul>")[0]
            assert f'href="{web.site_url(site)}"' in section
        assert web.label_of(web.hub_url) is None


@pytest.mark.trio
async def test_missing_file_is_404_and_directory_serves_its_index(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        base = web.base_url("python")
        assert (await client.get(f"{base}/no/such/page.html")).status_code == 404
        assert (await client.get(f"{base}/../../etc/passwd")).status_code == 404
        moved = await client.get(f"{base}/tutorial")
        assert moved.status_code == 301 and moved.headers["location"] == "/tutorial/"
        index = await client.get(f"{base}/tutorial/")
        assert index.status_code == 200
        assert index.content == (fixture_web.site("python").root / "tutorial" / "index.html").read_bytes()


@pytest.mark.trio
async def test_upstream_links_are_rewritten_to_the_local_host(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        original = (fixture_web.site("sqlite").root / "prosupport.html").read_text()
        served = (await client.get(f"{web.base_url('sqlite')}/prosupport.html")).text
        assert "https://sqlite.org/th3.html" in original
        assert "https://sqlite.org/th3.html" not in served
        assert f"{web.base_url('sqlite')}/th3.html" in served
        # apache's "docs-project" is not under the "httpd.apache.org/docs" prefix and stays upstream
        apache = (await client.get(web.site_url("apache"))).text
        assert "http://httpd.apache.org/docs-project/" in apache


@pytest.mark.trio
async def test_labels_are_the_serving_sites_group(fixture_web):
    async with serve_web(fixture_web) as web:
        for site in fixture_web.sites:
            assert web.label_of(f"{web.base_url(site)}/any/page.html") == site.group
        assert web.label_of("http://example.org/") is None


@pytest.mark.trio
async def test_upstream_urls_map_to_local_urls_at_path_boundaries(fixture_web):
    async with serve_web(fixture_web) as web:
        python = web.base_url("python")
        assert (
            web.map_upstream("https://docs.python.org/3/tutorial/re.html#x") == f"{python}/tutorial/re.html#x"
        )
        assert web.map_upstream("http://docs.python.org/3/") == f"{python}/"
        assert web.map_upstream("https://docs.python.org/3.6/whatsnew/changelog.html") is None
        assert (
            web.map_upstream("https://www.sqlite.org/lang.html?x=1")
            == f"{web.base_url('sqlite')}/lang.html?x=1"
        )
        assert web.map_upstream("https://SQLITE.org:443/lang.html") == f"{web.base_url('sqlite')}/lang.html"
        assert web.map_upstream("https://example.org/") is None
        assert web.map_upstream("not a url") is None


@pytest.mark.trio
async def test_keep_alive_serves_many_requests_on_one_connection(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        for _ in range(5):
            assert (await client.get(web.site_url("gnuplot"))).status_code == 200
        records = [r for r in web.request_log if r.site == "gnuplot"]
        assert len(records) == 5
        assert all(r.end >= r.start and r.status == 200 and r.fault is None for r in records)


@pytest.mark.trio
async def test_head_answers_headers_without_body(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        response = await client.head(web.site_url("postgresql"))
        assert response.status_code == 200 and response.content == b""
        assert int(response.headers["content-length"]) > 0


@pytest.mark.trio
async def test_a_page_carries_an_etag_and_a_request_naming_it_gets_304_without_a_body(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        url = f"{web.base_url('python')}/tutorial/"
        first = await client.get(url)
        tag = first.headers["etag"]
        assert re.fullmatch(r'"[0-9a-f]{16}"', tag) and (await client.get(url)).headers["etag"] == tag
        for asked in (tag, f'"other", {tag}', "*"):
            unchanged = await client.get(url, headers={"if-none-match": asked})
            assert unchanged.status_code == 304 and unchanged.content == b""
            assert unchanged.headers["etag"] == tag and "content-length" not in unchanged.headers
        changed = await client.get(url, headers={"if-none-match": '"0000000000000000"'})
        assert changed.status_code == 200 and changed.content == first.content
        other = await client.get(
            f"{web.base_url('python')}/no/such/page.html", headers={"if-none-match": "*"}
        )
        assert other.status_code == 404 and "etag" not in other.headers


def test_fixture_is_small_and_covers_three_groups_with_enough_pages(fixture_web):
    files = [p for p in fixture_web.root.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 5 * 1024 * 1024
    assert len(fixture_web.groups) >= 3
    for site in fixture_web.sites:
        pages = list(site.root.rglob("*.html"))
        assert 40 <= len(pages) <= 120, site.name
        linked = sum(
            1 for p in pages if re.search(rb'href="(?!https?:)[^"#]+\.html', p.read_bytes(), re.IGNORECASE)
        )
        assert linked >= len(pages) // 2, site.name


@pytest.mark.trio
async def test_cross_topic_links_are_injected_deterministically(fixture_web):
    async with serve_web(fixture_web, cross_links=12, seed=3) as web, httpx.AsyncClient() as client:
        assert len(web.cross_links) == 12
        for source, target in web.cross_links:
            assert web.label_of(source) != web.label_of(target)
            page = await client.get(source)
            assert f'href="{target}"' in page.text
            assert (await client.get(target)).status_code == 200
        async with serve_web(fixture_web, cross_links=12, seed=3) as again:
            same = [
                (a.replace(str(again.port), "P"), b.replace(str(again.port), "P"))
                for a, b in again.cross_links
            ]
        assert same == [
            (a.replace(str(web.port), "P"), b.replace(str(web.port), "P")) for a, b in web.cross_links
        ]
    async with serve_web(fixture_web) as plain:
        assert plain.cross_links == []


@pytest.mark.trio
async def test_odd_requests_get_answers_and_the_server_keeps_serving(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        base = web.base_url("python")
        assert (await client.get(base + "/" + "x" * 5000 + ".html")).status_code == 404
        assert (await client.get(base + "/%00.html")).status_code == 404
        assert (await client.get(base + "/%C3%A9t%C3%A9.html")).status_code == 404
        assert (await client.post(base + "/about.html", content=b"x" * 10000)).status_code == 405
        stream = await trio.open_tcp_stream(web.addresses["python"], web.port)
        async with stream:
            await stream.send_all(b"NONSENSE\r\n\r\n")
            assert (await stream.receive_some(100)).startswith(b"HTTP/1.1 400 ")
        assert (await client.get(web.site_url("python"))).status_code == 200
