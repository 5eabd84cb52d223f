"""`topicswarm demo`: bookmark subsets per node, and the whole demo without a terminal (slow)."""

from __future__ import annotations

import json

import pytest

from crawler.taxonomy import parse_bookmarks
from node.cli import main
from node.cli.demo import BOOKMARKS, bookmark_subset, map_bookmarks


def urls_of(html: str) -> set[str]:
    return {d.url for d in parse_bookmarks(html).documents}


def test_each_node_gets_a_different_nonempty_seed_subset_and_every_negative():
    text = BOOKMARKS.read_text()
    full = parse_bookmarks(text)
    subsets = [parse_bookmarks(bookmark_subset(text, i, 3)) for i in range(3)]
    assert len({frozenset(d.url for d in s.documents) for s in subsets}) == 3
    for subset in subsets:
        assert subset.topics == full.topics
        for topic in full.topics:
            assert subset.positives(topic), f"{topic} lost every seed"
        assert {d.url for d in subset.documents if d.polarity == 0} == {
            d.url for d in full.documents if d.polarity == 0
        }
    assert set().union(*(urls_of(bookmark_subset(text, i, 3)) for i in range(3))) == urls_of(text)


def test_upstream_urls_are_mapped_and_unknown_ones_kept():
    html = '<A HREF="https://www.sqlite.org/x.html">x</A> <A HREF="http://elsewhere/">y</A>'
    mapped = map_bookmarks(html, lambda u: "http://127.0.0.3:9/x.html" if "sqlite" in u else None)
    assert 'HREF="http://127.0.0.3:9/x.html"' in mapped and 'HREF="http://elsewhere/"' in mapped


@pytest.mark.slow
def test_demo_runs_three_networked_nodes_and_prints_a_summary(capsys):
    assert main(["demo", "--json", "--pages", "40", "--timeout", "40"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    nodes = summary["nodes"]
    assert len(nodes) == 3
    assert len({n["peer_id"] for n in nodes}) == 3
    for node in nodes:
        assert node["pages"] >= 40
        assert node["peers"] >= 1
        assert set(node["harvest"]) == {"Databases", "Sysadmin", "Mathematics"}
