"""Proxies: the setting, else the environment as curl reads it; NO_PROXY and loopback go direct; a real
fetch through a proxy on loopback."""

from __future__ import annotations

import pytest
import trio

from crawler.fetch import Fetcher
from crawler.proxies import proxy_resolver
from crawler.settings import CrawlSettings
from node.config import ConfigError, parse_config
from tests.proxy_server import serve_as_proxy, serve_as_socks_proxy

PROXY = "http://proxy.corp:3128"


def test_the_environment_chooses_by_scheme_and_falls_back_to_all_proxy():
    proxy_for = proxy_resolver("", {"HTTP_PROXY": PROXY, "all_proxy": "http://other:1"})
    assert proxy_for("http", "docs.python.org", None) == PROXY
    assert proxy_for("https", "docs.python.org", None) == "http://other:1"
    assert proxy_resolver("", {})("http", "docs.python.org", None) is None


@pytest.mark.parametrize(
    ("no_proxy", "host", "port", "direct"),
    [
        ("example.org", "example.org", None, True),
        ("example.org", "docs.example.org", None, True),
        (".example.org", "docs.example.org", None, True),
        ("example.org", "notexample.org", None, False),
        ("10.0.0.0/8, intranet", "10.2.3.4", None, True),
        ("10.0.0.0/8, intranet", "intranet", None, True),
        ("10.0.0.0/8", "11.0.0.1", None, False),
        ("example.org:8080", "example.org", 8080, True),
        ("example.org:8080", "example.org", 443, False),
        ("[2001:db8::1]:80", "2001:db8::1", 80, True),
        ("*", "anything.test", None, True),
    ],
)
def test_no_proxy_sends_its_hosts_direct(no_proxy, host, port, direct):
    proxy_for = proxy_resolver("", {"https_proxy": PROXY, "NO_PROXY": no_proxy})
    assert proxy_for("https", host, port) == (None if direct else PROXY)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "localhost", "::1", "node.localhost"])
def test_loopback_always_goes_direct(host):
    assert proxy_resolver(PROXY, {})("http", host, 8000) is None


def test_the_setting_overrides_the_environment_and_direct_ignores_it():
    environ = {"HTTP_PROXY": "http://env:1", "NO_PROXY": "intranet"}
    assert proxy_resolver(PROXY, environ)("http", "docs.python.org", None) == PROXY
    assert proxy_resolver(PROXY, environ)("http", "intranet", None) is None
    assert proxy_resolver("direct", environ)("http", "docs.python.org", None) is None


@pytest.mark.parametrize("bad", ["proxy.corp:3128", "http://", "ftp://proxy"])
def test_a_proxy_setting_that_is_no_http_url_is_a_configuration_error(bad):
    with pytest.raises(ConfigError, match=r"\[crawler\] proxy must be a URL starting http://, https://"):
        parse_config(f'[crawler]\nproxy = "{bad}"\n')


async def fetch_through(serve, scheme: str, url: str) -> tuple[object, list[str]]:
    """Fetch `url` through a proxy served by `serve` (tests.proxy_server); the result and what it saw."""
    requests: list[str] = []
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve, requests)
        settings = CrawlSettings(proxy=f"{scheme}://127.0.0.1:{port}", download_delay=0.0, retry_times=0)
        fetcher = Fetcher(settings)
        try:
            with trio.fail_after(20):
                result = await fetcher.fetch(url)
        finally:
            await fetcher.aclose()
        nursery.cancel_scope.cancel()
    return result, requests


@pytest.mark.trio
async def test_requests_to_the_web_go_through_the_proxy_robots_txt_included():
    result, requests = await fetch_through(serve_as_proxy, "http", "http://docs.test/manual/index.html")
    assert result.error is None and b"http://docs.test/manual/index.html" in result.body
    assert requests == [
        "GET http://docs.test/robots.txt HTTP/1.1",
        "GET http://docs.test/manual/index.html HTTP/1.1",
    ]


@pytest.mark.trio
async def test_a_socks5h_proxy_such_as_tors_resolves_the_names_and_carries_the_requests():
    result, requests = await fetch_through(
        serve_as_socks_proxy, "socks5h", "http://hidden.onion.test/page.html"
    )
    assert result.error is None and b"/page.html" in result.body
    assert requests == [
        "CONNECT hidden.onion.test:80",
        "GET /robots.txt HTTP/1.1",
        "CONNECT hidden.onion.test:80",
        "GET /page.html HTTP/1.1",
    ]
