"""The webs built from ../shared/data: the devweb unpacked once, and WebKB as one site per university."""

from __future__ import annotations

import re

import httpx
import pytest

from simnet.web import load_web, serve_web


@pytest.mark.slow
@pytest.mark.trio
async def test_devweb_serves_every_site_entry_and_rewrites_cross_site_links(shared_data):
    web_corpus = load_web("devweb")
    assert len(web_corpus.sites) == 12 and len(web_corpus.groups) == 4
    assert load_web("devweb").root == web_corpus.root  # unpacked once, then reused
    async with serve_web(web_corpus) as web, httpx.AsyncClient() as client:
        for site in web_corpus.sites:
            assert (await client.get(web.site_url(site))).status_code == 200, site.name
        git = (await client.get(web.site_url("git"))).text
        assert "https://www.kernel.org/pub/software/scm/git/docs/" not in git
        local = web.map_upstream("https://www.postgresql.org/docs/current/sql.html")
        assert local is not None and web.label_of(local) == "databases"


@pytest.mark.slow
@pytest.mark.trio
async def test_webkb_has_a_site_per_university_with_pages_labelled_by_class(shared_data):
    web_corpus = load_web("webkb")
    assert {s.name for s in web_corpus.sites} == {"cornell", "texas", "washington", "wisconsin", "misc"}
    async with serve_web(web_corpus) as web, httpx.AsyncClient() as client:
        entry = await client.get(web.site_url("cornell"))
        assert entry.status_code == 200 and entry.headers["content-type"] == "text/html"
        assert not entry.content.startswith(b"MIME-Version")  # the saved HTTP headers are stripped
        assert web.label_of(web.site_url("cornell")) == "department"
        hrefs = re.findall(rb'href="(http://127\.0\.[^"#]+)"', entry.content, re.IGNORECASE)
        assert len(hrefs) >= 10
        statuses = [(await client.get(h.decode(), follow_redirects=True)).status_code for h in hrefs]
        labelled = [h for h in hrefs if web.label_of(h.decode())]
        assert statuses.count(200) >= len(labelled) > 0
        assert web.map_upstream("http://www.cs.cornell.edu/") == web.site_url("cornell").replace(
            "index.html", ""
        )
        assert web.label_of(web.base_url("cornell") + "/www.cs.cornell.edu/not/in/the/set.html") is None
