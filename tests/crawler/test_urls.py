from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from crawler.settings import CrawlSettings
from crawler.urls import (
    has_overlong_query,
    has_repeated_segments,
    host_of,
    looks_like_trap,
    normalize_url,
    strip_params,
)


def test_scheme_and_host_lowercased_default_port_and_fragment_dropped():
    assert normalize_url("HTTP://Example.COM:80/Path#frag") == "http://example.com/Path"
    assert normalize_url("https://example.com:443/") == "https://example.com/"


def test_non_default_port_kept():
    assert normalize_url("http://example.com:8080") == "http://example.com:8080/"


def test_dot_segments_resolved_in_absolute_and_relative_urls():
    assert normalize_url("http://a.com/a/./b/../c") == "http://a.com/a/c"
    assert normalize_url("http://a.com/../../x") == "http://a.com/x"
    assert normalize_url("http://a.com/a/b/..") == "http://a.com/a/"
    assert normalize_url("../d?x=1#y", base="http://a.com/a/b/c") == "http://a.com/a/d?x=1"


def test_percent_encoding_normalised():
    assert normalize_url("http://a.com/%7euser/%41?q=%e2%82%ac") == "http://a.com/~user/A?q=%E2%82%AC"
    assert normalize_url("http://a.com/a b/ü") == "http://a.com/a%20b/%C3%BC"
    assert normalize_url("http://a.com/100%/x") == "http://a.com/100%25/x"
    assert normalize_url("http://a.com/a%2fb") == "http://a.com/a%2Fb"  # reserved escapes stay escaped


def test_hrefs_read_as_a_browser_reads_them():
    base = "http://x.org/docs/page.html"
    assert normalize_url("sub\\guide.html", base) == "http://x.org/docs/sub/guide.html"  # Windows-authored
    assert normalize_url("..\\index.html", base) == "http://x.org/index.html"
    assert normalize_url("/a\\b?q=c\\d#e", base) == "http://x.org/a/b?q=c%5Cd"  # not in the query
    assert normalize_url("gui\nde\t.html", base) == "http://x.org/docs/guide.html"  # broken across lines


def test_query_sorted_only_when_configured():
    url = "http://a.com/p?b=2&a=1"
    assert normalize_url(url) == url
    assert normalize_url(url, settings=CrawlSettings(url_sort_query=True)) == "http://a.com/p?a=1&b=2"


def test_session_ids_and_click_trackers_are_dropped_and_other_parameters_kept():
    assert normalize_url("http://a.com/p?id=7&JSESSIONID=ab12&utm_source=feed&utm_medium=rss") == (
        "http://a.com/p?id=7"
    )
    assert normalize_url("http://a.com/cart;jsessionid=AB12?x=1&fbclid=zz") == "http://a.com/cart?x=1"
    assert normalize_url("http://a.com/p?ASPSESSIONIDQQ=1&session=keep") == "http://a.com/p?session=keep"
    assert normalize_url("http://a.com/p?gclid=1") == "http://a.com/p"
    keep_all = CrawlSettings(url_strip_params=())
    assert normalize_url("http://a.com/p?utm_source=x", settings=keep_all) == "http://a.com/p?utm_source=x"
    only_ref = CrawlSettings(url_strip_params=("ref",))
    assert (
        normalize_url("http://a.com/p?ref=x&utm_source=y", settings=only_ref) == "http://a.com/p?utm_source=y"
    )


def test_stripping_a_normalised_url_matches_normalising_with_the_list():
    patterns = CrawlSettings().url_strip_params
    for url in ("http://a.com/p;jsessionid=1?q=1&utm_term=x", "http://a.com/x?a=1", "http://a.com/"):
        written = normalize_url(url, settings=CrawlSettings(url_strip_params=()))
        assert strip_params(written, patterns) == normalize_url(url)


def test_non_http_and_malformed_urls_rejected():
    for url in [
        "ftp://a.com/",
        "mailto:x@y.z",
        "javascript:void(0)",
        "http://",
        "http://a..b/",
        "http://a.com:99999/",
    ]:
        assert normalize_url(url) is None, url


def test_length_limits_from_settings():
    long_path = "http://a.com/" + "x" * 1000
    assert normalize_url(long_path) is None
    assert normalize_url(long_path, settings=CrawlSettings(url_max_length=2000)) is not None
    long_host = "http://" + "a" * 252 + ".com/"
    assert normalize_url(long_host) is None
    assert normalize_url("http://" + "a" * 200 + ".com/") is not None


def test_idn_host_encoded():
    assert normalize_url("https://Bücher.de/") == "https://xn--bcher-kva.de/"


def test_host_of_always_names_the_port():
    assert host_of("http://Example.com/a") == "example.com:80"
    assert host_of("https://example.com/a") == "example.com:443"
    assert host_of("http://127.0.0.2:8000/x") == "127.0.0.2:8000"


def test_trap_heuristics():
    assert has_repeated_segments("http://a.com/x/y/x/y/x/y/x/y")
    assert not has_repeated_segments("http://a.com/docs/2024/01/index.html")
    assert has_overlong_query("http://a.com/?" + "a=1&" * 200)
    assert not has_overlong_query("http://a.com/?a=1")
    assert looks_like_trap("http://a.com/a/a/a/a/")


url_text = st.lists(
    st.sampled_from([*list("abcXYZ019-._~%/?&=#:@+ ü"), "%2e", "%41", "%e2", "..", "./"]), max_size=30
).map("".join)


@example(host="a.com", rest="%a%41")  # a decoded escape must not form a new one
@given(host=st.sampled_from(["a.com", "Ex.ORG:8080", "127.0.0.2:80", "b.net:443"]), rest=url_text)
def test_normalisation_is_idempotent(host, rest):
    for scheme in ("http", "HTTPS"):
        first = normalize_url(f"{scheme}://{host}/{rest}")
        if first is not None:
            assert normalize_url(first) == first
