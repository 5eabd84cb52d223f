"""HTML parsing: title, visible text, links with their DOM context, and the page's crawl directives.

One pass over the lexbor DOM (selectolax) numbers the DOM *leaves* in document order, as the apprentice
of seed 002 needs (1.4 in the research notes): text leaves with their text, and empty or void elements
(`<br>`, `<img>`, empty `<td>`) as text-less leaves; whitespace-only text is skipped. Each link records
the leaf span of its anchor, so a link learner can take tokens at signed DOM offsets from it
(`Link.context`, `offset_context`). Navigation (`<nav>`, role=navigation) counts for links and leaves
but is left out of the page's visible text, as are scripts, styles and other invisible content. A panel
marked only by a class or id ("navigation", "navbar") stays in the text: LaTeX2HTML's names the sections
above and beside the page, words a short page needs to be classified (without them, filters of the
devweb's Mathematics fell from 0.99 to 0.89-0.94 on some nodes, rejecting short gnuplot pages).

Malformed or binary input never raises: it yields an empty page whose `error` says why. `parse_page` hands
PDFs to `crawler.pdf` and everything else to `parse_html`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from selectolax.lexbor import LexborHTMLParser, LexborNode

from crawler.charsets import html_text, may_hold_zero_bytes, plain_text
from crawler.feeds import feed_urls
from crawler.settings import CrawlSettings
from crawler.urls import normalize_url as _normalize_url

# Navigation links repeat on every page of a site: resolving each (href, base) once saves most of the cost.
# Links as written, parameters kept: the crawl drops those its url_strip_params names (`Crawler`), which a
# user may have set to fewer than the default.
_AS_WRITTEN = replace(CrawlSettings(), url_strip_params=())


@lru_cache(maxsize=65_536)
def normalize_url(url: str, base: str | None = None) -> str | None:
    return _normalize_url(url, base, _AS_WRITTEN)


INVISIBLE = frozenset(
    {"script", "style", "noscript", "template", "head", "svg", "math", "iframe", "object", "embed", "canvas"}
    | {"select", "datalist", "noframes", "#comment"}
)
NAVIGATION = frozenset({"nav"})
BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "br",
        "dd",
        "details",
        "dialog",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "html",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "caption",
        "option",
    ]
)
CONTEXT_RADIUS = 5  # d_max of the apprentice (seed 002/003: 5)
LEAF_CHARS = 200  # one leaf's text kept in a link's context
# Links read from one page, in document order: at most MAX_LINKS targets (Heritrix's max-outlinks; an href
# without its fragment is one target) and MAX_ANCHORS anchors in all. A real index page has many anchors
# to some hundreds of pages (Python's contents.html: 13,959 to 488); a hostile 2 MB page of bare anchors
# has 70,000 targets, each a row of the repository's link table with its context (12 MB a page) and a
# frontier candidate.
MAX_LINKS = 6000
MAX_ANCHORS = 30_000
ANCHOR_CHARS = 500
_ATTRIBUTE_TAGS = frozenset(
    {"a", "img", "div", "ul", "ol", "section", "aside", "header", "footer", "span", "table"}
)
# Elements whose attributes the walk reads (href or src, rel, title, alt). Links are those of anchors, of
# image-map areas (their alt text as the anchor's) and of frames and iframes (the pages a browser shows in
# them), as Heritrix and Nutch follow them; images only give their alt text.
_LINK_TAGS = frozenset({"a", "img", "area", "frame", "iframe"})
_LINK_ATTRIBUTE = {"a": "href", "area": "href", "frame": "src", "iframe": "src"}
# Phrasing elements, which browsers run together with the text beside them ("<code>d</code><var>xxx</var>"
# is R's dxxx): only the whitespace around them separates words. Any other element starts with a space.
_INLINE = frozenset(
    {"span", "a", "b", "i", "em", "strong", "code", "small", "sub", "sup", "abbr", "cite", "kbd"}
    | {"var", "samp", "tt", "mark", "q", "u", "s", "font", "time", "label", "del", "ins", "dfn", "big"}
    | {"bdi", "bdo", "data", "nobr"}
)
_REFRESH_URL = re.compile(r"""^\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?['"]?([^'"]*)['"]?\s*$""", re.IGNORECASE)
_BINARY_SNIFF = 1024
MAX_ALTERNATES = 16  # typed <link> elements of a head read for feeds: a hostile head may hold thousands
_CONTROL_BYTES = bytes([*range(9), *range(14, 32)])
_SKIP_SCHEMES = ("javascript:", "mailto:", "tel:", "data:")


@dataclass(frozen=True)
class Link:
    """An out-link. `leaf_start..leaf_end` is the anchor's span in `ParsedPage.leaves` (equal for an
    anchor without text leaves of its own); `context` holds (offset, text) for the non-empty leaves within
    `CONTEXT_RADIUS` of the anchor, offset 0 being the anchor's own text."""

    url: str
    anchor_text: str
    dom_path: str
    leaf_start: int
    leaf_end: int
    context: tuple[tuple[int, str], ...] = ()
    nofollow: bool = False
    title: str = ""


@dataclass(frozen=True)
class ParsedPage:
    url: str
    base_url: str
    title: str = ""
    text: str = ""
    links: tuple[Link, ...] = ()
    leaves: tuple[str, ...] = ()
    canonical: str | None = None
    meta_refresh: str | None = None
    refresh_delay: float | None = None
    lang: str | None = None
    lang_hints: tuple[str, ...] = ()
    noindex: bool = False
    nofollow: bool = False
    description: str = ""
    feeds: tuple[str, ...] = ()  # the feeds its head names (`crawler.feeds`)
    error: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def offset_context(page: ParsedPage, link: Link, radius: int = CONTEXT_RADIUS) -> list[tuple[int, str]]:
    """(offset, leaf text) for every leaf within `radius` of the anchor; empty leaves kept as ""."""
    return list(offset_context_from(page.leaves, link, radius))


def _clean(text: str) -> str:
    return " ".join(text.split())


def _looks_binary(body: bytes) -> bool:
    head = body[:_BINARY_SNIFF]
    if b"\x00" in head:
        return True
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls > len(head) // 10


PDF_TYPE = "application/pdf"
PDF_MAGIC = b"%PDF-"
ROBOTS_AGENT = "topicswarm"  # the crawler's name in meta robots and X-Robots-Tag directives
# X-Robots-Tag directives that take a value after a colon (else a name before a colon is a crawler's)
_VALUED_DIRECTIVES = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


def is_pdf(body: bytes, content_type: str) -> bool:
    """A PDF by its type, or by its signature whatever the server called it (as browsers sniff)."""
    return content_type == PDF_TYPE or body[:8].lstrip().startswith(PDF_MAGIC)


def parse_page(
    body: bytes, url: str, content_type: str = "text/html", headers: dict[str, str] | None = None
) -> ParsedPage:
    """Any body the crawler keeps: a PDF (`crawler.pdf`), else HTML or plain text (`parse_html`). The
    headers that stand for a page's own tags hold for each, a PDF having no other place for them: the
    X-Robots-Tag's noindex and nofollow, a `Link: <...>; rel="canonical"` and a `Refresh` (as browsers
    follow it), where the page names none of its own."""
    headers = headers or {}
    if is_pdf(body, content_type):
        from crawler.pdf import parse_pdf  # pypdf loads when the first PDF comes

        page = parse_pdf(body, url)
    else:
        page = parse_html(body, url, content_type, headers)
    if page.canonical is None and "link" in headers:
        canonical = link_header_canonical(headers["link"], url)
        if canonical is not None:
            page = replace(page, canonical=canonical)
    if page.meta_refresh is None and headers.get("refresh"):
        target, delay = _parse_refresh(headers["refresh"], url)
        if target is not None:
            page = replace(page, meta_refresh=target, refresh_delay=delay)
    robots = x_robots_directives(headers.get("x-robots-tag", ""))
    noindex = "noindex" in robots or "none" in robots
    nofollow = "nofollow" in robots or "none" in robots
    if (noindex and not page.noindex) or (nofollow and not page.nofollow):
        links = tuple(replace(link, nofollow=True) for link in page.links) if nofollow else page.links
        page = replace(page, noindex=page.noindex or noindex, nofollow=page.nofollow or nofollow, links=links)
    return page


_LINK_VALUE = re.compile(r"<([^>]*)>((?:\s*;\s*[^;,]*)*)")
_CANONICAL_REL = re.compile(r"""rel\s*=\s*(?:"[^"]*\bcanonical\b[^"]*"|canonical\b)""", re.IGNORECASE)


def link_header_canonical(value: str, url: str) -> str | None:
    """The canonical URL an HTTP `Link` header names (RFC 8288: `<URL>; rel="canonical"`, several links
    comma-separated, URLs resolved against the page's), or None."""
    for match in _LINK_VALUE.finditer(value):
        if _CANONICAL_REL.search(match.group(2)):
            return normalize_url(match.group(1).strip(), url)
    return None


def x_robots_directives(value: str) -> frozenset[str]:
    """The X-Robots-Tag directives for every crawler or for this one. One header per line (the fetcher
    keeps them so); within one, a crawler's name before a colon addresses the directives after it, up to
    the next name ("noindex", "otherbot: noindex, nofollow")."""
    directives: set[str] = set()
    for header in value.lower().splitlines():
        agent = None
        for part in header.split(","):
            name, colon, rest = part.partition(":")
            if colon and name.strip() not in _VALUED_DIRECTIVES:
                agent, part = name.strip(), rest
            part = part.strip()
            if part and agent in (None, ROBOTS_AGENT):
                directives.add(part)
    return frozenset(directives)


def parse_html(
    body: bytes, url: str, content_type: str = "text/html", headers: dict[str, str] | None = None
) -> ParsedPage:
    """Parse a fetched body; `url` is the final URL (links resolve against it or `<base href>`)."""
    headers = headers or {}
    if not body.strip():
        return ParsedPage(url=url, base_url=url, error="empty")
    if _looks_binary(body) and not may_hold_zero_bytes(body, headers.get("content-type")):
        return ParsedPage(url=url, base_url=url, error="binary")
    if content_type == "text/plain":
        text = plain_text(body, headers.get("content-type"))
        return ParsedPage(url=url, base_url=url, text=_clean(text), lang=_header_lang(headers))
    try:
        tree = LexborHTMLParser(html_text(body, headers.get("content-type")))
        return _Walker(tree, url, headers).page()
    except (ValueError, TypeError, RecursionError, UnicodeError) as exc:
        return ParsedPage(url=url, base_url=url, error=f"unparsable: {type(exc).__name__}")
    except Exception as exc:  # selectolax raises its own errors on pathological input: never crash a crawl
        return ParsedPage(url=url, base_url=url, error=f"unparsable: {type(exc).__name__}")


def _header_lang(headers: dict[str, str]) -> str | None:
    value = headers.get("content-language", "").split(",")[0].strip().lower()
    return value or None


class _Walker:
    """One depth-first pass over the DOM collecting leaves, text and links."""

    def __init__(self, tree: LexborHTMLParser, url: str, headers: dict[str, str]) -> None:
        self.tree = tree
        self.url = url
        self.headers = headers
        self.base = url
        self.leaves: list[str] = []
        self.text_parts: list[str] = []
        self.links: list[list] = []  # [href, anchor text, dom path, leaf start, leaf end, nofollow, title]
        self.targets: set[str] | None = None  # hrefs without their fragment, once MAX_LINKS anchors are read

    def page(self) -> ParsedPage:
        head = self.tree.head
        meta = _head_meta(head) if head is not None else _HeadMeta()
        if meta.base:
            self.base = normalize_url(meta.base, self.url) or self.url
        root = self.tree.root
        if root is not None:
            self._walk(root)
        text = "".join(self.text_parts)
        text = "\n".join([" ".join(line.split()) for line in text.split("\n") if line and not line.isspace()])
        page_nofollow = "nofollow" in meta.robots or "none" in meta.robots
        links = tuple(self._build_links(page_nofollow))
        hints = tuple(h for h in (meta.html_lang, meta.meta_lang, _header_lang(self.headers)) if h)
        refresh_url, refresh_delay = _parse_refresh(meta.refresh, self.base)
        canonical = normalize_url(meta.canonical, self.base) if meta.canonical else None
        html = _html_element(self.tree)
        if html is not None and not hints:
            lang = (html.attributes.get("lang") or "").strip().lower()
            hints = (lang,) if lang else ()
        return ParsedPage(
            url=self.url,
            base_url=self.base,
            title=meta.title,
            text=text,
            links=links,
            leaves=tuple(self.leaves),
            canonical=canonical,
            meta_refresh=refresh_url,
            refresh_delay=refresh_delay,
            lang=hints[0].split("-")[0] if hints else None,
            lang_hints=hints,
            noindex="noindex" in meta.robots or "none" in meta.robots,
            nofollow=page_nofollow,
            description=meta.description,
            feeds=feed_urls(meta.alternates, self.base),
        )

    def _walk(self, root: LexborNode) -> None:
        # lexbor's C traversal yields the nodes in document order; an element ends once its last child has
        # ended, so a stack of open elements keyed by their last child's id (mem_id) gives the element ends
        # (a block's line break, an anchor's leaf span) without a Python walk over child pointers. Invisible
        # subtrees are passed over up to their last descendant.
        leaves, text_parts = self.leaves, self.text_parts
        add_leaf, add_text = leaves.append, text_parts.append
        marked = _navigation_marked(root) or ()
        # Open elements: (last child id of the enclosing element, id, tag, kind, anchor, in_nav before it).
        open_elements: list[tuple[int, int, str, int, int, bool]] = []
        expect = 0  # id of the innermost open element's last child (no node has id 0)
        in_nav = False
        skip_to = 0  # id of the last node of an invisible subtree being passed over (0: none)
        skipped_id = 0
        kinds = _TAG_KINDS
        for node in root.traverse(include_text=True):
            node_id = node.mem_id
            if skip_to:
                if node_id != skip_to:
                    continue
                skip_to, node_id = 0, skipped_id
            else:
                tag = node.tag
                if tag == "-text":
                    value = node.text_content
                    if value and not value.isspace():
                        add_leaf(" ".join(value.split())[:LEAF_CHARS])
                        if not in_nav:
                            add_text(value)
                    elif value and not in_nav:
                        add_text(" ")  # "a</b> &nbsp; <b>b" are two words, not "ab"
                    if node_id != expect:
                        continue
                else:
                    kind = kinds.get(tag)
                    if kind is None:
                        kind = _tag_kind(tag)
                    if kind & _SKIP:
                        if kind & _LINK_OR_IMAGE:  # an iframe: its page is a link, its content fallback
                            self._embedded_link(node, open_elements)
                        last = node.last_child
                        if last is not None:
                            while (deeper := last.last_child) is not None:
                                last = deeper
                            skip_to, skipped_id = last.mem_id, node_id
                            continue
                    else:
                        nav = in_nav or bool(kind & _NAV) or node_id in marked
                        last = node.last_child
                        if kind & _LINK_OR_IMAGE:
                            attrs = node.attributes
                            anchor = -1
                            href = attrs.get(_LINK_ATTRIBUTE[tag]) if tag != "img" else None
                            if href and self._room(href):
                                own_path = "/".join([entry[2] for entry in open_elements] + [tag])
                                anchor = self._open_anchor(href, attrs, own_path, len(leaves))
                            if last is None:
                                add_leaf("")  # a text-less leaf (the apprentice's odd offsets)
                                if tag == "img" and not nav and attrs.get("alt"):
                                    add_text(f" {attrs['alt']} ")
                                if anchor >= 0:
                                    self._close_anchor(anchor, attrs.get("alt") if tag == "area" else None)
                        else:
                            anchor = -1
                            if last is None:
                                add_leaf("")  # empty or void element: a text-less leaf
                                if kind & _BLOCK:
                                    add_text("\n")
                        if last is not None:
                            if kind & _SPACE:
                                add_text(" ")
                            elif kind & _BLOCK:
                                add_text("\n")  # a block starts a line as it ends one
                            open_elements.append((expect, node_id, tag, kind, anchor, in_nav))
                            expect = last.mem_id
                            in_nav = nav
                            continue
                if node_id != expect:
                    continue
            # This node has ended, and with it every open element whose last child it was.
            while node_id == expect:
                expect, node_id, _, kind, anchor, in_nav = open_elements.pop()
                if anchor >= 0:
                    self._close_anchor(anchor)
                if kind & _BLOCK:
                    add_text("\n")

    def _room(self, href: str) -> bool:
        """Whether the page's link bounds leave room for a link to `href` (counting it if so). Below
        MAX_LINKS anchors there are fewer targets than that too, so most pages never count them."""
        read = len(self.links)
        if read < MAX_LINKS:
            return True
        if read >= MAX_ANCHORS:
            return False
        if self.targets is None:
            self.targets = {link[0].split("#", 1)[0] for link in self.links}
        target = href.split("#", 1)[0]
        if target not in self.targets:
            if len(self.targets) >= MAX_LINKS:
                return False
            self.targets.add(target)
        return True

    def _open_anchor(self, href: str, attrs, path: str, leaf_start: int) -> int:
        rel = (attrs.get("rel") or "").lower().split()
        title = _clean(attrs.get("title") or "")
        self.links.append([href, "", path, leaf_start, leaf_start, "nofollow" in rel, title])
        return len(self.links) - 1

    def _close_anchor(self, index: int, text: str | None = None) -> None:
        """End an anchor's span; its text is that of its leaves, or `text` (an area's alt) given."""
        link = self.links[index]
        if len(self.leaves) == link[3]:
            self.leaves.append("")  # an anchor without leaves of its own still occupies one position
        link[4] = len(self.leaves) - 1
        own = " ".join(filter(None, self.leaves[link[3] : link[4] + 1])) if text is None else _clean(text)
        link[1] = own[:ANCHOR_CHARS]

    def _embedded_link(self, node: LexborNode, open_elements: list) -> None:
        """An iframe's page as a link at the iframe's place, one text-less position long."""
        attrs = node.attributes
        src = attrs.get("src")
        if src and self._room(src):
            path = "/".join([entry[2] for entry in open_elements] + [node.tag])
            self._close_anchor(self._open_anchor(src, attrs, path, len(self.leaves)))

    def _build_links(self, page_nofollow: bool) -> list[Link]:
        out: list[Link] = []
        leaves = self.leaves
        for href, anchor_text, path, start, end, nofollow, title in self.links:
            if not href or href[0] == "#" or href.lstrip()[:11].lower().startswith(_SKIP_SCHEMES):
                continue
            target = normalize_url(href, self.base)
            if target is None:
                continue
            lo = max(0, start - CONTEXT_RADIUS)
            context = [item for item in enumerate(leaves[lo:start], lo - start) if item[1]]
            if anchor_text:
                context.append((0, anchor_text))
            context += [item for item in enumerate(leaves[end + 1 : end + CONTEXT_RADIUS + 1], 1) if item[1]]
            out.append(
                Link(target, anchor_text, path, start, end, tuple(context), nofollow or page_nofollow, title)
            )
        return out


# What the walk does with an element, as bit flags looked up once per tag name.
_SKIP, _BLOCK, _SPACE, _NAV, _LINK_OR_IMAGE = 1, 2, 4, 8, 16
_TAG_KINDS: dict[str, int] = {}
_TAG_KINDS_MAX = 4096  # custom element names are unbounded: stop remembering new ones past this


def _tag_kind(tag: str | None) -> int:
    if tag is None or tag[0] in "-#_":
        return _SKIP
    if tag in INVISIBLE:
        return _SKIP | (_LINK_OR_IMAGE if tag in _LINK_TAGS else 0)
    kind = _BLOCK if tag in BLOCK else 0 if tag in _INLINE else _SPACE
    kind |= (_NAV if tag in NAVIGATION else 0) | (_LINK_OR_IMAGE if tag in _LINK_TAGS else 0)
    if len(_TAG_KINDS) < _TAG_KINDS_MAX:
        _TAG_KINDS[tag] = kind
    return kind


def _navigation_marked(root: LexborNode) -> set[int] | None:
    """Ids of the elements that mark navigation or hidden content by attribute (role, hidden), found by one
    selector pass so that the walk reads attributes of links and images only."""
    marked = {
        node.mem_id
        for node in root.css("[role], [hidden]")
        if node.tag in _ATTRIBUTE_TAGS and _marks_navigation(node.attributes)
    }
    return marked or None


def _marks_navigation(attrs: dict[str, str | None]) -> bool:
    return attrs.get("role") == "navigation" or "hidden" in attrs


def offset_context_from(
    leaves: Sequence[str], link: Link, radius: int = CONTEXT_RADIUS
) -> Iterator[tuple[int, str]]:
    lo = max(0, link.leaf_start - radius)
    hi = min(len(leaves), link.leaf_end + radius + 1)
    for index in range(lo, hi):
        if index < link.leaf_start:
            yield index - link.leaf_start, leaves[index]
        elif index > link.leaf_end:
            yield index - link.leaf_end, leaves[index]
        else:
            yield 0, leaves[index]


@dataclass
class _HeadMeta:
    title: str = ""
    base: str | None = None
    canonical: str | None = None
    refresh: str | None = None
    robots: frozenset[str] = frozenset()
    html_lang: str | None = None
    meta_lang: str | None = None
    description: str = ""
    alternates: list[tuple[str, str, str]] = field(default_factory=list)  # (rel, type, href) with a type


def _head_meta(head: LexborNode) -> _HeadMeta:
    meta = _HeadMeta()
    parser = head.parser
    robots: set[str] = set()
    title_seen = base_seen = canonical_seen = False  # the first match counts, even with an empty value
    # One selector pass in document order: the first title, base and canonical link, and every meta.
    for node in parser.css("title, base[href], link[rel][href], meta"):
        tag = node.tag
        if tag == "title":
            if not title_seen:
                title_seen = True
                meta.title = _clean(node.text() or "")[:1000]
            continue
        attrs = node.attributes
        if tag == "base":
            if not base_seen:
                base_seen, meta.base = True, attrs.get("href")
            continue
        if tag == "link":
            rel = attrs.get("rel") or ""
            if not canonical_seen and "canonical" in rel.lower().split():
                canonical_seen, meta.canonical = True, attrs.get("href")
            elif attrs.get("type") and len(meta.alternates) < MAX_ALTERNATES:
                meta.alternates.append((rel, attrs.get("type") or "", attrs.get("href") or ""))
            continue
        content = (attrs.get("content") or "").strip()
        equiv = (attrs.get("http-equiv") or "").lower()
        name = (attrs.get("name") or "").lower()
        if equiv == "refresh" and meta.refresh is None:
            meta.refresh = content
        elif equiv == "content-language" and content:
            meta.meta_lang = content.split(",")[0].strip().lower()
        elif name in ("robots", ROBOTS_AGENT):
            robots.update(part.strip() for part in content.lower().split(","))
        elif name == "language" and content and meta.meta_lang is None:
            meta.meta_lang = content.split(",")[0].strip().lower()
        elif name == "description":
            meta.description = _clean(content)[:1000]
    meta.robots = frozenset(robots)
    html = _html_element(parser)
    if html is not None:
        lang = (html.attributes.get("lang") or html.attributes.get("xml:lang") or "").strip().lower()
        meta.html_lang = lang or None
    return meta


def _html_element(tree: LexborHTMLParser) -> LexborNode | None:
    root = tree.root  # the html element of any parsed document: no selector search needed
    return root if root is not None and root.tag == "html" else tree.css_first("html")


def _parse_refresh(content: str | None, base: str) -> tuple[str | None, float | None]:
    if not content:
        return None, None
    delay_text = re.match(r"\s*([\d.]+)", content)
    try:
        delay = float(delay_text.group(1)) if delay_text else 0.0
    except ValueError:
        delay = 0.0
    rest = content[delay_text.end() :] if delay_text else content
    match = _REFRESH_URL.match(rest)
    target = match.group(1).strip() if match else ""
    if not target:
        return None, delay
    return normalize_url(target, base), delay
