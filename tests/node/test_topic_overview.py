"""The Topics screen's figures for every topic come from one read of the cooperation tables: read topic by
topic, each read queued behind a cooperation round's work (GET /api/topics took 12 s at 150 topics)."""

from __future__ import annotations

from crawler.repository import Repository
from node.cooperation import store
from node.cooperation.testing import make_repository
from tests.node.test_cli_topics_rename import PEER


def test_the_overview_has_each_built_meta_summary_and_each_local_model_version(tmp_path):
    make_repository(tmp_path / "repository.db", node=0)
    with Repository(tmp_path / "repository.db") as repo:
        store.ensure_schema(repo)
        with repo.transaction() as db:
            for topic, origin, role, version in [
                ("Databases", "local", "local", 3),
                ("Databases", PEER, "received", 7),
                ("Mathematics", "local", "local", 1),
            ]:
                db.execute(
                    "INSERT INTO coop_models (topic, origin, kind, role, version, wire, received_at) "
                    "VALUES (?, ?, 'linear', ?, ?, x'00', 0)",
                    [topic, origin, role, version],
                )
        curve = [{"loss": 0.2, "accuracy": 0.9}]
        store.save_meta(
            repo, "Databases", loss=0.2, model={"w": [1.0]}, curve=curve, members=[{"origin": PEER}]
        )
        store.save_meta(repo, "Mathematics", loss=0.3)  # a loss set, no meta-classifier built yet
        overview = store.topic_overview(repo)
    assert overview == {
        "Databases": {
            "meta": {"loss": 0.2, "curve": curve, "members": [{"origin": PEER}], "build": {}},
            "model_version": 3,
        },
        "Mathematics": {"meta": None, "model_version": 1},
    }
