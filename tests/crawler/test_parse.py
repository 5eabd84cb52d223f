"""Parsing: visible text, links with DOM context, crawl directives, and input that must not crash."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from crawler.parse import (
    CONTEXT_RADIUS,
    MAX_ANCHORS,
    MAX_LINKS,
    PDF_TYPE,
    offset_context,
    parse_html,
    parse_page,
)
from simnet.web.corpus import FIXTURE_DIR
from tests.pdf_samples import make_pdf

BASE = "http://example.org/dir/page.html"
# Every field parse_html returned for fixture pages and hand-written edge cases before the traversal-based
# walker, generated once from the per-node DOM walk (commit 6fa5bbc): the speed-up must not change output.
# One edge case was regenerated when iframes became links (its `<iframe src="/f">` is one now).
EXPECTED = json.loads((Path(__file__).parent / "data" / "parse_expected.json").read_text(encoding="utf-8"))


def test_apprentice_offsets_follow_the_worked_example():
    # Seed 002's offset scheme (research notes 1.4): leaves in document order, <br> a text-less leaf.
    html = b'<p>Links: <a href="v1">NHL <b>hockey</b></a><br><a href="v2">Recipes</a> more text</p>'
    page = parse_html(html, BASE)
    assert page.leaves == ("Links:", "NHL", "hockey", "", "Recipes", "more text")
    v1, v2 = page.links
    assert (v1.leaf_start, v1.leaf_end) == (1, 2)
    assert (v2.leaf_start, v2.leaf_end) == (4, 4)
    expected = [(-1, "Links:"), (0, "NHL"), (0, "hockey"), (1, ""), (2, "Recipes"), (3, "more text")]
    assert offset_context(page, v1) == expected
    assert v2.context == ((-4, "Links:"), (-3, "NHL"), (-2, "hockey"), (0, "Recipes"), (1, "more text"))
    assert v1.anchor_text == "NHL hockey"
    assert v1.dom_path == "html/body/p/a"


def test_links_resolve_against_base_href_and_drop_non_http_targets():
    html = b"""<html><head><base href="http://cdn.example.org/root/"></head><body>
    <a href="a.html">A</a> <a href="mailto:x@y.z">mail</a> <a href="javascript:void(0)">js</a>
    <a href="#top">top</a> <a href="ftp://x.org/f">ftp</a> <a href="/b#frag">B</a></body></html>"""
    page = parse_html(html, BASE)
    assert [link.url for link in page.links] == [
        "http://cdn.example.org/root/a.html",
        "http://cdn.example.org/b",
    ]
    assert page.base_url == "http://cdn.example.org/root/"


def test_visible_text_leaves_out_scripts_styles_and_navigation_but_keeps_nav_links():
    html = b"""<html><head><title> The  Title </title><style>p{color:red}</style></head><body>
    <nav><a href="/home">Home</a></nav><script>var secret = 1;</script>
    <h1>Heading</h1><p>Body <b>bold</b> text.</p><noscript>enable js</noscript></body></html>"""
    page = parse_html(html, BASE)
    assert page.title == "The Title"
    assert page.text == "Heading\nBody bold text."
    assert "secret" not in page.text and "Home" not in page.text
    assert [link.url for link in page.links] == ["http://example.org/home"]
    assert page.links[0].dom_path == "html/body/nav/a"


def test_context_is_bounded_by_the_radius():
    items = "".join(f"<li>item{i}</li>" for i in range(20))
    html = f'<ul>{items}<li><a href="/x">target</a></li>{items}</ul>'.encode()
    page = parse_html(html, BASE)
    (link,) = page.links
    offsets = [offset for offset, _ in link.context]
    assert min(offsets) == -CONTEXT_RADIUS and max(offsets) == CONTEXT_RADIUS
    assert (0, "target") in link.context


def test_meta_refresh_canonical_robots_and_language_hints():
    html = b"""<html lang="de-AT"><head>
    <meta http-equiv="refresh" content="0; URL='../next.html'">
    <link rel="alternate canonical" href="/canon.html">
    <meta name="robots" content="noindex, nofollow">
    <meta http-equiv="content-language" content="en"></head><body><a href="x">x</a></body></html>"""
    page = parse_html(html, BASE, headers={"content-language": "fr"})
    assert page.meta_refresh == "http://example.org/next.html"
    assert page.refresh_delay == 0.0
    assert page.canonical == "http://example.org/canon.html"
    assert page.noindex and page.nofollow
    assert page.links[0].nofollow
    assert page.lang_hints == ("de-at", "en", "fr")
    assert page.lang == "de"


@pytest.mark.parametrize(
    ("header", "noindex", "nofollow"),
    [
        ("noindex", True, False),
        ("NoFollow", False, True),
        ("none", True, True),
        ("otherbot: noindex, nofollow", False, False),  # addressed to another crawler
        ("otherbot: noindex, topicswarm: nofollow", False, True),
        ("otherbot: noindex\nnofollow", False, True),  # a second header names no crawler
        ("unavailable_after: 25 Jun 2010 15:00:00 PST, noindex", True, False),
        ("max-snippet: 20", False, False),
        ("", False, False),
    ],
)
def test_x_robots_tag_noindex_and_nofollow_hold_as_in_a_meta_tag(header, noindex, nofollow):
    html = b'<html><head><title>t</title></head><body><a href="/a">a</a></body></html>'
    page = parse_page(html, BASE, headers={"x-robots-tag": header})
    assert (page.noindex, page.nofollow) == (noindex, nofollow)
    assert page.links[0].nofollow == nofollow


def test_x_robots_tag_holds_for_a_pdf_which_has_no_meta_tags():
    body = make_pdf(["A paper about topics."], title="Paper", links=["http://example.org/cited"])
    page = parse_page(body, BASE, PDF_TYPE, {"x-robots-tag": "noindex, nofollow"})
    assert page.text and page.noindex and page.nofollow
    assert page.links and all(link.nofollow for link in page.links)


def test_rel_nofollow_marks_only_that_link():
    page = parse_html(b'<a href="/a" rel="nofollow ugc">a</a><a href="/b">b</a>', BASE)
    assert [link.nofollow for link in page.links] == [True, False]


def test_anchor_without_text_still_gets_a_leaf_position():
    page = parse_html(b'<p>before</p><a href="/img"><img src="x.png"></a><p>after</p>', BASE)
    (link,) = page.links
    assert page.leaves[link.leaf_start] == ""
    assert link.anchor_text == ""
    assert dict(link.context) == {-1: "before", 1: "after"}


def test_frames_are_links_to_the_pages_they_show():
    html = b"""<html><head><title>Home</title></head><frameset cols="20%,80%">
    <frame src="menu.html" name="menu"><frame src="main.html" title="Main page"></frameset>
    <noframes><p>Your browser <a href="old.html">lacks frames</a></p></noframes></html>"""
    page = parse_html(html, BASE)
    assert [(link.url, link.dom_path, link.title) for link in page.links] == [
        ("http://example.org/dir/menu.html", "html/frameset/frame", ""),
        ("http://example.org/dir/main.html", "html/frameset/frame", "Main page"),
    ]
    # <noframes> holds raw text for a browser with frames, markup and all: never the page's words
    assert "lacks" not in page.text and "<a" not in page.text


def test_an_iframe_is_a_link_at_its_place_and_its_fallback_content_no_text():
    html = b'<p>before</p><iframe src="/embedded" title="Map">fallback</iframe><p>after</p><iframe></iframe>'
    page = parse_html(html, BASE)
    (link,) = page.links
    assert (link.url, link.anchor_text, link.title) == ("http://example.org/embedded", "", "Map")
    assert dict(link.context) == {-1: "before", 1: "after"}
    assert "fallback" not in page.text


def test_image_map_areas_are_links_named_by_their_alt_text():
    html = b"""<img src="campus.gif" usemap="#m"><map name="m">
    <area shape="rect" coords="0,0,9,9" href="/library" alt="The  library">
    <area shape="rect" coords="9,9,19,19" href="/ads" alt="Ads" rel="nofollow"><area nohref alt="Nothing">
    </map>"""
    page = parse_html(html, BASE)
    assert [(link.url, link.anchor_text, link.nofollow) for link in page.links] == [
        ("http://example.org/library", "The library", False),
        ("http://example.org/ads", "Ads", True),
    ]


def test_a_page_gives_links_to_its_first_max_links_targets_and_all_its_text():
    anchors = "".join(f'<a href="/p{i}">w{i}</a> ' for i in range(MAX_LINKS + 10))
    page = parse_html(f'{anchors}<iframe src="/late"></iframe><a href="/p0#again">again</a>'.encode(), BASE)
    assert len(page.links) == MAX_LINKS + 1  # a target already linked is no new one
    assert page.links[-2].url == f"http://example.org/p{MAX_LINKS - 1}"
    assert page.links[-1].anchor_text == "again"
    assert f"w{MAX_LINKS + 9}" in page.text


def test_an_index_page_keeps_its_many_anchors_to_a_few_pages_up_to_max_anchors():
    # Python's contents.html: 13,959 anchors, most to sections of the same 488 pages
    anchors = "".join(f'<a href="/page{i % 50}.html#s{i}">s{i}</a>' for i in range(MAX_ANCHORS + 5))
    page = parse_html(anchors.encode(), BASE)
    assert len(page.links) == MAX_ANCHORS
    assert len({link.url for link in page.links}) == 50


def test_link_and_refresh_headers_stand_for_the_tags_a_page_lacks():
    headers = {
        "link": '<https://cdn.example.org/a,b>; rel="preload", </papers/final.pdf>; rel="canonical"',
        "refresh": "0; url=/moved.html",
    }
    pdf = parse_page(make_pdf(["A paper"]), "http://example.org/papers/v2.pdf", PDF_TYPE, headers)
    assert pdf.canonical == "http://example.org/papers/final.pdf"  # a PDF has no other place for it
    html = parse_page(b"<p>moved</p>", BASE, "text/html", headers)
    assert (html.meta_refresh, html.refresh_delay) == ("http://example.org/moved.html", 0.0)
    own = b'<head><link rel="canonical" href="/own"><meta http-equiv="refresh" content="5; url=/mine"></head>'
    page = parse_page(own, BASE, "text/html", headers)
    assert (page.canonical, page.meta_refresh) == ("http://example.org/own", "http://example.org/mine")


def test_binary_and_empty_input_yield_an_empty_page_with_a_reason():
    assert parse_html(b"", BASE).error == "empty"
    assert parse_html(b"   \n", BASE).error == "empty"
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4
    page = parse_html(png, BASE)
    assert page.error == "binary" and page.text == "" and page.links == ()


def test_malformed_html_never_raises():
    broken = [
        b"<html><body><p>unclosed <b>bold <a href='/x'>link",
        b"<<<>>><a href=>x</a><a href='http://[::1'>bad ipv6</a>" + b"<div>" * 5000,
        b"\xff\xfe\xfa garbage \xc3\x28 <title>t</title>",
        b"<a href='http://" + b"x" * 2000 + b".org/'>long host</a>",
        b"<meta http-equiv=refresh content='abc;url='><base href='::::'>",
    ]
    for body in broken:
        page = parse_html(body, BASE)
        assert page.ok or page.error
    deep = parse_html(b"<div>" * 5000 + b"deep text" + b"</div>" * 5000, BASE)
    assert "deep text" in deep.text


def test_encoding_declared_in_meta_is_honoured():
    body = '<meta charset="windows-1251"><p>Привет</p>'.encode("windows-1251")
    assert parse_html(body, BASE).text == "Привет"


def test_plain_text_bodies_are_kept_as_text():
    page = parse_html(b"just   some\ntext", BASE, content_type="text/plain")
    assert page.text == "just some text" and page.links == ()


@pytest.mark.parametrize("case", EXPECTED, ids=lambda case: case.get("page") or case["html"][:40])
def test_output_is_identical_to_the_per_node_walk(case):
    body = (FIXTURE_DIR / case["page"]).read_bytes() if "page" in case else case["html"].encode()
    page = parse_html(body, case["url"])
    got = json.loads(json.dumps(dataclasses.asdict(page), ensure_ascii=False))
    for name, expected in case["expected"].items():
        assert got[name] == expected, name


def test_space_between_elements_separates_words_and_a_block_starts_a_line():
    # LaTeX2HTML writes "Previous:</B> <A>Yerrorlines</A> &nbsp; <B><A>Index</A>": two words, not one
    html = b"""<p><b>Previous:</b> <a href="/y">Yerrorlines</a> &nbsp; <b><a href="/i">Index</a></b></p>
    <strong>Subsections</strong><ul><li>Surface plots</ul>x<span>y</span><div>z</div>"""
    page = parse_html(html, BASE)
    assert page.text == "Previous: Yerrorlines Index\nSubsections\nSurface plots\nxy\nz"
    assert "" not in page.leaves[:3]  # whitespace is no leaf: the apprentice's offsets are unchanged


def test_phrasing_elements_run_together_with_the_text_beside_them_as_a_browser_shows_them():
    html = b"<p>The <code>d</code><var>xxx</var> functions, H<sub>2</sub>O, <tt>ls</tt>-l, x<q-x>y</q-x>"
    assert parse_html(html, BASE).text == "The dxxx functions, H2O, ls-l, x y"  # an unknown element: a space


def test_a_panel_named_navigation_by_class_only_keeps_its_words_as_text():
    # LaTeX2HTML's panel names the sections above and beside the page: topical words a short page needs
    html = b"""<div class="navigation"><b>Up:</b> <a href="/u">Plotting styles</a></div><p>Bars.</p>
    <div role="navigation"><a href="/h">Home</a></div>"""
    assert parse_html(html, BASE).text == "Up: Plotting styles\nBars."


def test_block_ends_are_line_breaks_so_a_menu_outside_nav_is_a_run_of_short_lines():
    # previews (crawler.preview.passages) tell menu lines from sentences by this line structure
    html = b"""<html><body><div class="menu"><ul><li><a href="/">Home</a><li><a href="/about">About</a>
    </ul></div><h1>Isolation</h1><p>Each transaction sees
    committed rows.</p></body></html>"""
    assert parse_html(html, BASE).text == "Home\nAbout\nIsolation\nEach transaction sees\ncommitted rows."
