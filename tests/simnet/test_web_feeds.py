"""The simulated web's feeds: where a page names its feed, and the order pages are published in."""

from __future__ import annotations

from simnet.web.feeds import FEED_LINK, published_order, with_feed_link


def test_the_feed_link_goes_into_the_head_else_the_start_of_the_body_else_first():
    assert with_feed_link(b"<html><head><title>T</title></HEAD><body>x</body></html>") == (
        b"<html><head><title>T</title>" + FEED_LINK + b"</HEAD><body>x</body></html>"
    )
    assert with_feed_link(b'<body class="a">x</body>') == b'<body class="a">' + FEED_LINK + b"x</body>"
    assert with_feed_link(b"plain words") == FEED_LINK + b"plain words"


def test_pages_are_published_newest_first_then_in_an_order_drawn_from_their_paths():
    pages = [(f"p{i}.html", 5.0) for i in range(30)] + [("old.html", 1.0), ("new.html", 9.0)]
    order = [path for path, _ in published_order("site", pages)]
    assert order[0] == "new.html" and order[-1] == "old.html"
    middle = order[1:-1]
    assert sorted(middle) == sorted(p for p, _ in pages[:30]) and middle != sorted(middle)  # not by name
    assert published_order("site", list(reversed(pages))) == published_order("site", pages)
    assert published_order("other", pages) != published_order("site", pages)  # each site its own draw
