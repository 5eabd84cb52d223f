"""A node of hundreds of topics: `status` sums their harvest up in a few lines and names the lowest, and
`topics list` gives each topic's pages and harvest beside its training documents."""

from __future__ import annotations

import json
from contextlib import contextmanager

from crawler.repository import Repository
from crawler.taxonomy import POSITIVE, Taxonomy, TrainingDocument, ensure_schema, store_taxonomy
from node.cli import main
from node.cli.status import LISTED_TOPICS, LOWEST_TOPICS, harvest_lines
from node.datadir import DataDir
from node.wording import LISTED_ITEMS, clipped, listed

HEADING = "harvest    share of the pages fetched for each topic that its classifier accepted"


def test_a_few_topics_are_each_listed_with_their_harvest():
    lines = harvest_lines({"Databases": 0.5, "Science/Mathematics": 0.95, "Sysadmin": 0.0}, {"Sysadmin"})
    assert lines == [
        HEADING,
        "           Databases           0.50",
        "           Science/Mathematics 0.95",
        "           Sysadmin            not crawled yet",
    ]


def test_many_topics_are_summed_up_with_the_lowest_harvests_named():
    harvest = {f"Topic/{i:03d}": i / 100 for i in range(40)}
    unfetched = {f"Topic/{i:03d}" for i in range(0, 40, 4)}  # 10 topics, their 0.0 measures nothing
    lines = harvest_lines(harvest, unfetched)
    assert len(harvest) > LISTED_TOPICS and len(lines) == 3 + LOWEST_TOPICS
    assert lines[1] == "           40 topics: 30 crawled (median 0.20), 10 not crawled yet"
    assert lines[2] == "           lowest (every topic's in `topicswarm topics list`):"
    assert lines[3:] == [f"           Topic/{i:03d} {i / 100:.2f}" for i in (1, 2, 3, 5, 6)]


def test_many_topics_none_crawled_yet_say_so_and_where_each_is():
    harvest = dict.fromkeys((f"Topic/{i:03d}" for i in range(LISTED_TOPICS + 1)), 0.0)
    assert harvest_lines(harvest, set(harvest))[1:] == [
        f"           {LISTED_TOPICS + 1} topics: 0 crawled, {LISTED_TOPICS + 1} not crawled yet",
        "           every topic's in `topicswarm topics list`",
    ]


def test_a_long_topic_key_keeps_its_top_folder_and_its_leaf():
    key = "Sysadmin/debian-handbook/sect/9.12. Power Management: Advanced Configuration and Power Interface"
    shown = clipped(key, 48)
    assert len(shown) == 48 and shown.startswith("Sysadmin/debian") and shown.endswith("Power Interface")
    assert "\u2026" in shown and clipped("Sysadmin", 48) == "Sysadmin"
    assert harvest_lines({key: 1.0}, set())[1] == f"           {shown} 1.00"


def test_topics_list_gives_each_topics_pages_and_harvest(tmp_path, capsys):
    data = DataDir(tmp_path / "node").ensure()
    topics = ("Math", "Math/Algebra", "Math/Geometry")
    with Repository(data.repository) as repo:
        ensure_schema(repo)
        docs = tuple(TrainingDocument(t, POSITIVE, url=f"http://h.test/{t}", text="x") for t in topics[1:])
        store_taxonomy(repo, Taxonomy(topics, docs))
        with repo.transaction() as db:
            db.conn.execute(
                "INSERT INTO topic_stats (at, topic, fetched, accepted, harvest_rate, mean_confidence) "
                "VALUES (1.0, 'Math/Algebra', 8, 6, 0, 0)"
            )
            for i, topic in enumerate(["Math/Algebra", "Math/Algebra", "Math/Geometry", None]):
                db.conn.execute(
                    "INSERT INTO documents (url, final_url, host, status, fingerprint, fetched_at, topic, "
                    "accepted) VALUES (?, ?, 'h.test', 200, 'ab', 1.0, ?, ?)",
                    [f"http://h.test/{i}", f"http://h.test/{i}", topic, int(topic is not None)],
                )
    assert main(["topics", "list", "--data", str(data.root), "--json"]) == 0
    rows = {row["key"]: row for row in map(json.loads, capsys.readouterr().out.splitlines())}
    figures = {key: (row["pages"], row["harvest"]) for key, row in rows.items()}
    assert figures == {"Math": (3, 0.75), "Math/Algebra": (2, 0.75), "Math/Geometry": (1, None)}
    assert main(["topics", "list", "--data", str(data.root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-2:] == ["pages", "harvest"]
    assert [line.split()[-2:] for line in lines[1:4]] == [["3", "0.75"], ["2", "0.75"], ["1", "-"]]


def test_a_list_in_a_line_names_its_first_items_and_counts_the_rest():
    assert listed(["Databases", "Sysadmin"]) == "Databases, Sysadmin"
    keys = [f"Topic/{i:03d}" for i in range(150)]
    shown = listed(keys)
    assert shown == ", ".join(keys[: LISTED_ITEMS - 1]) + f" and {150 - LISTED_ITEMS + 1} more"
    assert listed(keys[:LISTED_ITEMS]) == ", ".join(keys[:LISTED_ITEMS])  # no "and 1 more" for one item


def test_peers_with_a_hundred_topics_in_common_keep_their_topics_to_a_line(monkeypatch, capsys):
    shared = [f"Topic/{i:03d}" for i in range(100)]

    class Client:
        def peers(self):
            return {"peers": [{"peer_id": "12D3KooWPeer", "shared_topics": shared}], "blocked": []}

        def status(self):
            return {"networked": True}

    @contextmanager
    def connect(args):
        yield Client()

    monkeypatch.setattr("node.cli.peers.connect", connect)
    assert main(["peers"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["12D3KooWPeer", f"  topics {listed(shared)}"]
    assert lines[1].endswith(f"and {100 - LISTED_ITEMS + 1} more")
