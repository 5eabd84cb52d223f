"""`topicswarm demo`: bookmark subsets per node, and the whole demo without a terminal (slow)."""

from __future__ import annotations

import json

import pytest

from crawler.taxonomy import parse_bookmarks
from node.cli import main
from node.cli.demo import BOOKMARKS, bookmark_subset, format_summary, map_bookmarks


def urls_of(html: str) -> set[str]:
    return {d.url for d in parse_bookmarks(html).documents}


def test_each_node_keeps_two_seeds_per_topic_and_every_negative():
    text = BOOKMARKS.read_text()
    full = parse_bookmarks(text)
    for i in range(3):
        subset = parse_bookmarks(bookmark_subset(text, i, 3))
        assert subset.topics == full.topics
        for topic in full.topics:
            assert len(subset.positives(topic)) >= min(2, len(full.positives(topic))), topic
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
    topics = {"Databases", "Sysadmin", "Mathematics"}
    assert set(summary["targets"]) == topics
    for node in nodes:
        assert node["pages"] >= 40
        assert node["peers"] >= 1
        assert set(node["accepted_share"]) == topics
        assert 0.0 <= node["harvest"] <= 1.0  # ground truth: pages of the topics' groups / pages fetched
        for meta in node["meta"].values():
            assert "missing" in meta or meta["tested"] >= 0


def test_summary_says_why_a_figure_is_missing_instead_of_printing_one():
    node = {
        "peer_id": "12D3KooWExample",
        "pages": 40,
        "harvest": None,
        "accepted_share": {"Databases": 0.5},
        "peers": 0,
        "models_received": 0,
        "documents": {"local": 40, "pooled": 0},
        "meta": {
            "Databases": {
                "loss": 0.2,
                "kept": 8,
                "rejected": 30,
                "abstained": 10,
                "peer_models": 0,
                "tested": 30,
                "accuracy_local": 0.9,
                "accuracy_meta": 0.9,
            },
            "Sysadmin": {"missing": "topic has no model yet"},
        },
    }
    text = format_summary([node])
    assert "relevant n/a (no page fetched)" in text
    assert "0.90 (meta n/a: no peer model held" in text
    assert "0.21 of 48" in text  # abstained over every document judged, the rejected ones too
    assert "Sysadmin      n/a (no fetch) n/a (topic has no model yet)" in text


def test_summary_calls_the_ground_truths_share_relevant_and_the_classifiers_harvest():
    """The UI's and status' harvest is the share a topic's classifier accepted: the summary's ground-truth
    share, printed as "harvest" beside an "accepted" column, read as the same figure disagreeing."""
    node = {
        "peer_id": "12D3KooWExample",
        "pages": 120,
        "harvest": 0.96,
        "accepted_share": {"Databases": 0.11},
        "peers": 2,
        "models_received": 6,
        "documents": {"local": 120, "pooled": 63},
        "meta": {"Databases": {"missing": "topic has no model yet"}},
    }
    lines = format_summary([node]).splitlines()
    assert (
        "  relevant   share of the node's pages in one of its topics' groups, by the web's ground truth"
        in lines
    )
    assert "  harvest    share of the pages fetched for each topic that its classifier accepted" in lines
    assert any(line.startswith("node 1 12D3KooWExample: 120 pages, relevant 0.96, ") for line in lines)
    assert any(line.split() == ["topic", "harvest", "meta-model", "abstained", "accuracy"] for line in lines)
    assert any(line.split()[:2] == ["Databases", "0.11"] for line in lines)
    assert not any("harvest 0.96" in line for line in lines)


def test_summary_fits_a_100_column_terminal():
    topic = {
        "loss": 0.2,
        "kept": 16,
        "rejected": 64,
        "abstained": 20,
        "peer_models": 2,
        "tested": 107,
        "accuracy_local": 0.71,
        "accuracy_meta": 0.74,
    }
    node = {
        "peer_id": "12D3KooWNWTxULjgG6q7N4TxrcA73mkedXvjdkY2TDPwVAWqFBbe",
        "pages": 120,
        "harvest": 1.0,
        "accepted_share": {"Databases": 0.08, "Mathematics": 0.34},
        "peers": 2,
        "models_received": 6,
        "documents": {"local": 120, "pooled": 63},
        "meta": {"Databases": topic, "Mathematics": topic},
    }
    text = format_summary([node, node, node])
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "    Databases     0.08      own + 2 peer models    0.20 of 100  0.71 -> 0.74 on 107 pages" in text


def test_demo_refuses_a_broken_bookmarks_file_before_starting_anything(tmp_path, capsys):
    broken = tmp_path / "Bookmarks"
    broken.write_text('{"roots": {"bookmark_bar": {"type": "folder", "children": 7}}}', encoding="utf-8")
    assert main(["demo", "--bookmarks", str(broken), "--keep", str(tmp_path / "kept")]) == 2
    assert "'children' is not a list" in capsys.readouterr().err
    assert not (tmp_path / "kept").exists()


def test_a_failed_demo_node_is_explained_by_the_end_of_its_logs_since_its_folder_goes(tmp_path):
    from node.cli.demo import log_tail
    from node.datadir import DataDir

    data = DataDir(tmp_path / "node1")
    data.root.mkdir()
    assert log_tail(data) == "(the node wrote nothing)"
    (data.root / "stdout.log").write_text("x" * 5000 + "Traceback: the cause")
    data.log.write_text("started\nlistening failed: address in use\n")
    tail = log_tail(data, chars=100)
    assert tail.endswith("listening failed: address in use") and "Traceback: the cause" in tail
    assert len(tail) <= 2 * 100 + 1
