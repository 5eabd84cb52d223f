"""Kept community runs measured again: node order, the summary's counts, and clear errors on what is not a
kept run. The slow fixture community test checks that a run measured again at its own loss gives the figures
it printed."""

from __future__ import annotations

import pytest

from crawler.repository import Repository, StoredPage
from crawler.search import text_document
from node.cli.demo import BOOKMARKS
from simnet.scenarios.community import sign_test_p
from simnet.scenarios.refilter import main, node_dirs, summary


def node(local, meta, p=1.0):
    return {"filter_accuracy_local": local, "filter_accuracy_meta": meta, "meta_sign_test_p": p}


def test_nodes_are_read_in_node_order(tmp_path):
    for name in ("node10", "node2", "node1", "nodes.txt", "node3x"):
        (tmp_path / name).mkdir()
    assert [p.name for p in node_dirs(tmp_path)] == ["node1", "node2", "node10"]


def test_summary_counts_runs_where_every_node_is_better_and_nodes_by_verdict():
    runs = [
        {"nodes": [node(0.90, 0.95, 0.001), node(0.97, 0.98, 0.2)]},
        {"nodes": [node(0.90, 0.95, 0.01), node(0.99, 0.99)]},
        {"nodes": [node(0.80, 0.78, 0.04), node(None, 0.9)]},
    ]
    result = summary(runs)
    assert result["runs"] == 3 and result["every_node_better"] == 1
    assert result["nodes"] == {"better": 3, "equal": 1, "worse": 1, "unmeasured": 1}
    assert result["significantly"] == {"better": 2, "worse": 1}
    assert result["mean_local"] == pytest.approx((0.90 + 0.97 + 0.90 + 0.99 + 0.80) / 5)
    assert result["worst_difference"] == pytest.approx(-0.02)


def test_the_sign_test_weighs_wins_against_losses():
    assert sign_test_p(0, 0) == 1.0 and sign_test_p(15, 15) == 1.0
    assert sign_test_p(10, 0) == pytest.approx(2 / 2**10)  # ten of ten one way: 2 * 0.5**10
    assert sign_test_p(3, 9) == sign_test_p(9, 3) > 0.05  # 9 of 12 happens by chance
    assert sign_test_p(40, 15) < 0.01


def test_a_folder_that_is_not_a_kept_run_is_a_clear_error(tmp_path, capsys):
    lines = []
    assert main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), str(tmp_path)], out=lines.append) == 2
    assert "no node directory" in capsys.readouterr().err and lines == []
    assert main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), "--loss", "1.5", str(tmp_path)]) == 2
    assert "--loss" in capsys.readouterr().err


def test_a_run_of_another_web_is_a_clear_error(tmp_path, capsys):
    """A kept URL that is no page of the web given: its labels would be another web's."""
    (tmp_path / "node1").mkdir()
    repo = Repository(tmp_path / "node1" / "repository.db")
    repo.insert_page(StoredPage(text_document("http://127.0.0.11:4242/no-such-page.html", "", "words")))
    repo.close()
    assert main(["--web", "fixture", "--bookmarks", str(BOOKMARKS), str(tmp_path)]) == 2
    assert "is no page of the 'fixture' web" in capsys.readouterr().err
