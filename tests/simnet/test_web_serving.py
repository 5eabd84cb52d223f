"""The simulated web serves the fixture: hub, files, rewriting, labels and upstream mapping."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit
from xml.etree import ElementTree

import httpx
import pytest
import trio

import simnet.web.server
from simnet.web import Fault, FaultPlan, load_web, serve_web

SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"


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


def sitemap_locs(content: bytes, kind: str) -> list[str]:
    """The <loc>s of a sitemap document, checking it is a `kind` ("urlset" or "sitemapindex")."""
    root = ElementTree.fromstring(content)
    assert root.tag == SITEMAP + kind
    entries = root.findall(SITEMAP + ("url" if kind == "urlset" else "sitemap"))
    return [entry.findtext(SITEMAP + "loc") for entry in entries]


@pytest.mark.trio
async def test_with_sitemaps_each_sites_robots_txt_names_its_sitemap(fixture_web):
    faults = FaultPlan(
        [Fault("robots", host="python", path_prefix="/tutorial/"), Fault("robots_5xx", host="sqlite")]
    )
    async with serve_web(fixture_web, faults, sitemaps=True) as web, httpx.AsyncClient() as client:
        for site in ("postgresql", "gnuplot"):
            robots = (await client.get(web.base_url(site) + "/robots.txt")).text
            assert robots == f"User-agent: *\nDisallow:\nSitemap: {web.base_url(site)}/sitemap.xml\n"
        faulted = (await client.get(web.base_url("python") + "/robots.txt")).text
        assert faulted.splitlines() == [
            "User-agent: *",
            "Disallow: /tutorial/",
            f"Sitemap: {web.base_url('python')}/sitemap.xml",
        ]
        broken = await client.get(web.base_url("sqlite") + "/robots.txt")
        assert broken.status_code == 503 and "Sitemap" not in broken.text
        assert "Sitemap" not in (await client.get(web.hub_url + "robots.txt")).text


@pytest.mark.trio
async def test_sitemap_lists_exactly_the_sites_pages_each_of_which_is_served(fixture_web):
    site = fixture_web.site("python")
    async with serve_web(fixture_web, sitemaps=True) as web, httpx.AsyncClient() as client:
        base = web.base_url(site)
        response = await client.get(base + "/sitemap.xml")
        assert response.status_code == 200 and response.headers["content-type"] == "application/xml"
        assert response.content.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
        locs = sitemap_locs(response.content, "urlset")
        files = sorted(p.relative_to(site.root).as_posix() for p in site.root.rglob("*.html"))
        assert len(files) >= 40 and locs == [f"{base}/{name}" for name in files]
        for loc in locs:
            assert (await client.get(loc)).status_code == 200, loc
        entry = ElementTree.fromstring(response.content).find(SITEMAP + "url")
        mtime = (site.root / files[0]).stat().st_mtime
        assert entry.findtext(SITEMAP + "lastmod") == datetime.fromtimestamp(mtime, UTC).isoformat(
            timespec="seconds"
        )
        # the normal reply path: an ETag, a 304 for it, and the request log
        again = await client.get(base + "/sitemap.xml", headers={"if-none-match": response.headers["etag"]})
        assert again.status_code == 304
        assert [r.status for r in web.request_log if r.path == "/sitemap.xml"] == [200, 304]
        assert (await client.get(base + "/sitemap-1.xml")).status_code == 404


@pytest.mark.trio
async def test_without_sitemaps_robots_txt_names_none_and_sitemap_xml_is_404(fixture_web):
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        base = web.base_url("python")
        assert (await client.get(base + "/robots.txt")).text == "User-agent: *\nDisallow:\n"
        assert (await client.get(base + "/sitemap.xml")).status_code == 404


@pytest.mark.trio
async def test_a_site_over_the_part_size_gets_an_index_of_parts_holding_the_whole_urlset(
    fixture_web, monkeypatch
):
    async with serve_web(fixture_web, sitemaps=True) as web, httpx.AsyncClient() as client:
        whole = sitemap_locs((await client.get(web.base_url("gnuplot") + "/sitemap.xml")).content, "urlset")
        whole = [urlsplit(loc).path for loc in whole]  # the next server has another port
    monkeypatch.setattr(simnet.web.server, "SITEMAP_PART", 3)
    async with serve_web(fixture_web, sitemaps=True) as web, httpx.AsyncClient() as client:
        base = web.base_url("gnuplot")
        index = sitemap_locs((await client.get(base + "/sitemap.xml")).content, "sitemapindex")
        count = -(-len(whole) // 3)
        assert count > 1 and index == [f"{base}/sitemap-{n}.xml" for n in range(1, count + 1)]
        parts = [sitemap_locs((await client.get(loc)).content, "urlset") for loc in index]
        assert all(len(part) == 3 for part in parts[:-1]) and 1 <= len(parts[-1]) <= 3
        assert [loc for part in parts for loc in part] == [base + path for path in whole]
        assert (await client.get(f"{base}/sitemap-{count + 1}.xml")).status_code == 404


@pytest.mark.trio
async def test_sitemap_takes_text_pdf_and_sniffed_html_quotes_names_and_skips_the_rest(tmp_path):
    (tmp_path / "sites.tsv").write_text("site\tgroup\tentry\tupstream_prefixes\ns\tg\tindex.html\t\n")
    root = tmp_path / "s"
    files = {
        "index.html": b"<html><body>hi</body></html>",
        "a b/notes.txt": b"text",
        "a b/paper.pdf": b"%PDF-1.4",
        "docs/page": b"<!DOCTYPE html><html></html>",  # no extension: sniffed as HTML
        "docs/blob": b"\x00\x01binary",
        "image.png": b"\x89PNG",
        "labels.tsv": b"/index.html\tg\n",
        ".hidden.html": b"<html></html>",
        ".git/x.html": b"<html></html>",
    }
    for name, body in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(body)
    os.utime(root / "index.html", (0, 1714564800))
    async with serve_web(tmp_path, sitemaps=True) as web, httpx.AsyncClient() as client:
        base = web.base_url("s")
        content = (await client.get(base + "/sitemap.xml")).content
        locs = sitemap_locs(content, "urlset")
        names = ["a b/notes.txt", "a b/paper.pdf", "docs/page", "index.html"]
        assert locs == [f"{base}/{quote(name)}" for name in names]
        assert "%20" in locs[0]
        for loc, name in zip(locs, names, strict=True):
            answer = await client.get(loc)
            assert answer.status_code == 200 and answer.content == files[name]
        assert b"<lastmod>2024-05-01T12:00:00+00:00</lastmod>" in content


@pytest.mark.trio
async def test_every_html_page_names_its_sites_feed_of_its_newest_pages_in_words(fixture_web):
    from crawler.feeds import parse_feed
    from crawler.parse import parse_html
    from simnet.web.feeds import FEED_ENTRIES

    site = fixture_web.site("gnuplot")
    async with serve_web(fixture_web, feeds=True) as web, httpx.AsyncClient() as client:
        base = web.base_url(site)
        home = await client.get(web.site_url(site))
        assert parse_html(home.content, str(home.url)).feeds == (base + "/feed.xml",)
        response = await client.get(base + "/feed.xml")
        assert response.status_code == 200 and response.headers["content-type"] == "application/atom+xml"
        feed = parse_feed(response.content, base + "/feed.xml")
        assert feed.error is None and feed.kind == "feed" and len(feed.entries) == FEED_ENTRIES
        for entry in feed.entries[:5]:  # each a page of the site, its title among the entry's words
            page = await client.get(entry.url)
            assert page.status_code == 200 and entry.url.startswith(base + "/")
            assert parse_html(page.content, entry.url).title.strip() in entry.text
        again = parse_feed((await client.get(base + "/feed.xml")).content, base + "/feed.xml")
        assert again.entries == feed.entries  # one order on every reading
    async with serve_web(fixture_web) as web, httpx.AsyncClient() as client:
        assert (await client.get(web.base_url(site) + "/feed.xml")).status_code == 404
        home = await client.get(web.site_url(site))
        assert parse_html(home.content, str(home.url)).feeds == ()
