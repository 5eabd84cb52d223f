"""What a node holds from a peer its user blocked leaves the repository; what others sent too stays."""

from __future__ import annotations

import json

from crawler.repository import Repository
from node.cooperation import store
from node.cooperation.testing import add_document, crawl_result, make_repository

BLOCKED, OTHER = (
    "12D3KooWBlockedPeerxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "12D3KooWOtherPeerxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
)


def origins(repo: Repository) -> dict[str, tuple[str | None, list[str]]]:
    rows = repo.db.execute("SELECT url, origin, origins FROM documents").fetchall()
    return {url: (origin, json.loads(found or "[]")) for url, origin, found in rows}


def test_forgetting_a_peer_removes_its_results_models_cursors_and_its_name_in_origins(tmp_path):
    path = tmp_path / "repo.sqlite"
    make_repository(path, 0, crawled=2)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        with repo.transaction() as db:
            own = add_document(db, "http://h.test/own", "own", "own text", "Databases")
        store.pool_results(repo, BLOCKED, "Databases", [crawl_result("http://h.test/only", BLOCKED)], 5)
        store.pool_results(repo, BLOCKED, "Databases", [crawl_result("http://h.test/both", BLOCKED)], 6)
        store.pool_results(repo, OTHER, "Databases", [crawl_result("http://h.test/both", OTHER)], 3)
        store.pool_results(repo, OTHER, "Databases", [crawl_result("http://h.test/theirs", OTHER)], 4)
        store.pool_results(repo, BLOCKED, "Databases", [crawl_result("http://h.test/theirs", BLOCKED)], 7)
        store.pool_results(repo, BLOCKED, "Databases", [crawl_result("http://h.test/own", BLOCKED)], 8)
        store.save_meta(repo, "Databases", loss=0.2, members=[{"origin": "local"}, {"origin": BLOCKED}])
        store.save_meta(repo, "Mathematics", loss=0.2, members=[{"origin": "local"}, {"origin": OTHER}])
        before = origins(repo)
        forgotten = store.forget_peer(repo, BLOCKED)
        after = origins(repo)
        # until it is built again, the stored meta-classifier names the peer (a node blocking it offline
        # rebuilds it at its first cooperation round)
        weighing = [store.metas_weighing(repo, lambda origin, p=p: origin == p) for p in (BLOCKED, OTHER)]
        cursors = repo.db.execute("SELECT peer, cursor FROM coop_cursors").fetchall()
    assert before["http://h.test/both"] == (BLOCKED, [BLOCKED, OTHER])
    assert forgotten == {
        "models_forgotten": 0,
        "results_removed": 1,
        "results_kept": 1,
        "topics": ["Databases"],
    }
    assert "http://h.test/only" not in after
    assert after["http://h.test/both"] == (OTHER, [OTHER])  # the other peer's now
    assert after["http://h.test/theirs"] == (OTHER, [OTHER])
    assert after["http://h.test/own"] == (None, [])
    assert own and [tuple(c) for c in cursors] == [(OTHER, 4)]
    assert weighing == [["Databases"], ["Mathematics"]]


def test_forgetting_a_peer_removes_its_received_models_not_the_nodes_own(tmp_path):
    path = tmp_path / "repo.sqlite"
    make_repository(path, 0, crawled=2)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        for origin, role in ((BLOCKED, store.RECEIVED), (OTHER, store.RECEIVED), ("self", store.LOCAL)):
            repo.db.execute(
                "INSERT INTO coop_models (topic, origin, kind, role, version, wire, received_at) "
                "VALUES ('Databases', ?, 'linear', ?, 1, x'00', 0)",
                [origin, role],
            )
        forgotten = store.forget_peer(repo, BLOCKED)
        left = {row[0] for row in repo.db.execute("SELECT origin FROM coop_models")}
    assert forgotten["models_forgotten"] == 1 and left == {OTHER, "self"}
