"""`topicswarm topics rename`: a topic takes the key its community uses, with what it learned, and leaves
what belonged to its old community behind."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from crawler.repository import Repository
from node import metrics
from node.cli import main
from node.cooperation import store
from node.datadir import DataDir

BOOKMARKS = Path(__file__).parent.parent / "crawler" / "fixtures" / "chrome-bookmarks.html"
PEER = "12D3KooWPeerPeerPeerPeerPeerPeerPeerPeerPeerPeerPeer"


@pytest.fixture
def data(tmp_path, capsys) -> DataDir:
    """A data directory with the fixture's topics (Databases and two subtopics, Sysadmin), a
    peer's model, a meta-classifier, a proposal and a sync cursor of Databases, and the topic paused."""
    folder = tmp_path / "node"
    assert main(["init", "--data", str(folder)]) == 0
    assert main(["topics", "import", "--data", str(folder), "--no-fetch", str(BOOKMARKS)]) == 0
    capsys.readouterr()
    with Repository(DataDir(folder).repository) as repo:
        store.ensure_schema(repo)
        metrics.ensure_schema(repo)
        with repo.transaction() as db:
            for topic, origin, role in [("Databases", PEER, "received"), ("Databases", "local", "local")]:
                db.execute(
                    "INSERT INTO coop_models (topic, origin, kind, role, version, wire, received_at) "
                    "VALUES (?, ?, 'linear', ?, 1, x'00', 0)",
                    [topic, origin, role],
                )
            db.execute(
                "INSERT INTO coop_models (topic, origin, kind, role, version, wire, received_at) "
                "VALUES ('Sysadmin', ?, 'linear', 'received', 1, x'00', 0)",
                [PEER],
            )
            db.execute("INSERT INTO coop_cursors (peer, topic, cursor) VALUES (?, 'Databases', 7)", [PEER])
            db.execute("INSERT INTO crawl_state (topic, state, updated_at) VALUES ('Databases', 'paused', 0)")
        store.save_meta(repo, "Databases", loss=0.35, model={"weights": [1.0]}, members=[{"origin": PEER}])
        store.save_proposals(
            repo,
            "Databases/Query Optimisation",
            [
                {
                    "label": "plans",
                    "top_terms": [],
                    "sample_titles": [],
                    "size": 3,
                    "abstained": 0,
                    "doc_ids": [],
                }
            ],
        )
    return DataDir(folder)


def rows(data: DataDir, sql: str) -> list[tuple]:
    with Repository(data.repository) as repo:
        return [tuple(row) for row in repo.db.execute(sql).fetchall()]


def test_a_renamed_topic_keeps_the_users_settings_and_leaves_its_old_communitys_models(data, capsys):
    assert main(["topics", "rename", "--data", str(data.root), "Databases", "Computing/Databases"]) == 0

    out = capsys.readouterr().out
    assert out.startswith("renamed Databases and its 2 subtopics to Computing/Databases")
    assert "joins the community of Computing/Databases when it runs next" in out
    assert "it drops the 1 model of Databases that peers sent" in out
    assert rows(data, "SELECT topic, origin FROM coop_models") == [("Sysadmin", PEER)]
    assert rows(data, "SELECT * FROM coop_cursors") == []
    meta = rows(data, "SELECT topic, loss, model, members FROM coop_meta")
    assert meta == [("Computing/Databases", 0.35, None, "[]")]  # the loss stays; the build waits
    assert rows(data, "SELECT topic FROM coop_proposals") == [("Computing/Databases/Query Optimisation",)]
    assert rows(data, "SELECT topic, state FROM crawl_state") == [("Computing/Databases", "paused")]
    assert main(["topics", "list", "--data", str(data.root), "--json"]) == 0
    keys = {json.loads(line)["key"] for line in capsys.readouterr().out.splitlines()}
    assert {"Computing", "Computing/Databases", "Computing/Databases/Query Optimisation"} <= keys
    assert "Databases" not in keys


def test_the_json_answer_lists_every_key_moved(data, capsys):
    assert main(["topics", "rename", "--data", str(data.root), "Databases", "Data bases ", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["new"] == "Data bases"
    assert answer["moved"] == {
        "Databases": "Data bases",
        "Databases/Empty folder": "Data bases/Empty folder",
        "Databases/Query Optimisation": "Data bases/Query Optimisation",
    }
    assert answer["models"] == 1


def test_a_running_nodes_topics_are_not_renamed(data, capsys):
    data.api_address.write_text(json.dumps({"url": "http://127.0.0.1:9", "pid": os.getpid()}))
    assert main(["topics", "rename", "--data", str(data.root), "Databases", "Computing/Databases"]) == 2
    assert "stop it first" in capsys.readouterr().err
    assert ("Databases",) in rows(data, "SELECT key FROM topics")


def test_a_refused_rename_says_why_and_changes_nothing(data, capsys):
    before = rows(data, "SELECT key FROM topics ORDER BY key")
    assert main(["topics", "rename", "--data", str(data.root), "databases", "Sysadmin"]) == 2
    assert "did you mean 'Databases'" in capsys.readouterr().err
    assert main(["topics", "rename", "--data", str(data.root), "Databases", "Sysadmin"]) == 2
    assert "exists already" in capsys.readouterr().err
    assert rows(data, "SELECT key FROM topics ORDER BY key") == before


def test_importing_the_bookmarks_again_keeps_the_new_key(data, capsys):
    assert main(["topics", "rename", "--data", str(data.root), "Databases", "Computing/Databases"]) == 0
    capsys.readouterr()
    assert main(["topics", "import", "--data", str(data.root), "--no-fetch", str(BOOKMARKS)]) == 0
    assert "Databases is filed under Computing/Databases, as you renamed it" in capsys.readouterr().out
    keys = {key for (key,) in rows(data, "SELECT key FROM topics")}
    assert "Databases" not in keys and "Computing/Databases/Query Optimisation" in keys


def test_peers_lists_a_nearby_community_and_the_rename_that_joins_it(tmp_path):
    from node.cli.peers import nearby_lines

    nearby = [
        {"key": "Science", "peers": 2, "alike": []},
        {"key": "Science/Mathematics", "peers": 1, "alike": ["My Math"]},
    ]
    lines = nearby_lines(nearby, tmp_path / "my node")
    assert lines[1:3] == ["  Science  2 peers", "  Science/Mathematics  1 peer  like your My Math"]
    command = lines[3].split("`")[1]
    assert command == f"topicswarm topics rename --data '{tmp_path}/my node' 'My Math' Science/Mathematics"
    assert nearby_lines([], tmp_path) == []
