import json
import re
import sqlite3
from pathlib import Path

import pytest

from crawler.taxonomy import NEGATIVE, POSITIVE, Taxonomy, TrainingDocument
from node.cli import main as cli
from simnet.experiments import harvest, webrun
from simnet.web import serve_web_in_subprocess

BOOKMARKS = Path(harvest.__file__).resolve().parents[1] / "webs" / "fixture-bookmarks.html"


def test_target_group_is_the_majority_of_the_topic_subtree_bookmarks():
    docs = (
        TrainingDocument("A", POSITIVE, url="http://x/1"),
        TrainingDocument("A/B", POSITIVE, url="http://y/1"),
        TrainingDocument("A/B", POSITIVE, url="http://y/2"),
        TrainingDocument("C", POSITIVE, url="http://unknown/"),
        TrainingDocument("", NEGATIVE, url="http://y/3"),
    )
    groups = {"x": "gx", "y": "gy"}
    targets = webrun.target_groups(
        Taxonomy(("A", "A/B", "C"), docs), lambda url: groups.get(url.split("/")[2])
    )
    assert targets == {"A": "gy", "A/B": "gy"}


@pytest.mark.slow
def test_focused_crawls_of_the_fixture_web_harvest_better_than_breadth_first(capsys):
    assert harvest.main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), "--pages", "150"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    variants = report["variants"]
    assert set(variants) == {"bfs", "focused", "focused_retrain"}
    assert report["targets"] == {"Databases": "databases", "Mathematics": "math", "Sysadmin": "sysadmin"}
    for topic in report["targets"]:
        assert set(variants["bfs"][topic]) >= {"fetched", "harvest_rate", "precision", "recall"}
        assert variants["bfs"][topic]["fetched"] == 150
        for focused in ("focused", "focused_retrain"):
            assert variants[focused][topic]["fetched"] > 0
            assert variants[focused][topic]["harvest_rate"] > variants["bfs"][topic]["harvest_rate"]
    assert report["reorganisations"]["focused_retrain"] >= 1


@pytest.mark.slow
def test_crawl_command_focuses_on_imported_topics(tmp_path, capsys):
    with serve_web_in_subprocess("fixture") as web:
        text = BOOKMARKS.read_text()
        upstreams = re.findall(r'HREF="([^"]+)"', text)
        for upstream in upstreams:
            text = text.replace(upstream, web.map_upstream(upstream))
        local = tmp_path / "bookmarks.html"
        local.write_text(text)
        data = str(tmp_path / "node")
        (tmp_path / "node").mkdir()
        (tmp_path / "node" / "config.toml").write_text(
            '[crawler]\ndownload_delay = 0.0\nautothrottle_enabled = false\nallowed_hosts = ["127.0.0.0/8"]\n'
        )
        assert cli(["topics", "import", "--data", data, str(local)]) == 0
        assert f"imported 3 topics with {len(upstreams)} training documents" in capsys.readouterr().out
        assert cli(["crawl", "--data", data, "--max-pages", "60", "--strategy", "classifier", "--quiet"]) == 0
        capsys.readouterr()
        labels = {}
        with sqlite3.connect(tmp_path / "node" / "repository.db") as db:
            rows = db.execute(
                "SELECT d.final_url, f.topic FROM documents d JOIN frontier f ON f.url = d.url"
            ).fetchall()
            stats = db.execute("SELECT topic, fetched, harvest_rate FROM topic_stats").fetchall()
        for url, topic in rows:
            if topic is not None:
                labels.setdefault(topic, []).append(web.label_of(url))
    assert len(rows) == 60
    assert {t for t, *_ in stats} >= {"Databases", "Sysadmin", "Mathematics"}
    expected = {"Databases": "databases", "Sysadmin": "sysadmin", "Mathematics": "math"}
    for topic, groups in labels.items():
        assert sum(g == expected[topic] for g in groups) / len(groups) >= 0.8, topic
