"""Result sync with a Bloom filter of the URLs the asker holds: the provider leaves those out, the rest
is pooled as before, and a filter that claims everything costs the provider a bounded scan."""

from __future__ import annotations

import dataclasses
import json

import pytest
import trio

from crawler.repository import Repository
from crawler.taxonomy import store_taxonomy
from node.cooperation import store
from node.cooperation.results import CONFIDENCE_STEP, HELD_SCAN, HOLDS_EVERYTHING
from node.cooperation.settings import CooperationSettings
from node.cooperation.testing import make_repository, running_nodes, synthetic_taxonomy
from p2p.codec import encode_frame
from p2p.messages.results import HeldFilter, ResultSyncRequest
from p2p.protocols import RESULTS

pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


def own_urls(repo: Repository, topic: str) -> list[str]:
    query = "SELECT url FROM documents WHERE origin IS NULL AND topic = ? ORDER BY id"
    return [row[0] for row in repo.db.execute(query, [topic])]


def hold_copies(repo: Repository, urls: list[str], topic: str | None, accepted: int = 1) -> None:
    """Store pages at these URLs as this node's own crawl (as if it had fetched them too)."""
    with repo.transaction() as db:
        for url in urls:
            db.conn.execute(
                "INSERT INTO documents (url, final_url, host, status, title, text, fingerprint, fetched_at, "
                "topic, confidence, accepted) VALUES (?, ?, '127.0.0.1', 200, 'copy', 'copy', 'ab', 1.0, ?, "
                "0.5, ?)",
                [url, url, topic, accepted],
            )


def test_held_urls_are_the_topics_and_the_rejected_without_what_the_provider_sent(tmp_path):
    path = tmp_path / "r.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        databases = own_urls(repo, "Databases")
        mathematics = own_urls(repo, "Mathematics")
        hold_copies(repo, ["http://127.0.0.9/rejected"], None, accepted=0)
        hold_copies(repo, ["http://127.0.0.9/sub"], "Databases/Postgres")
        repo.db.execute(
            "UPDATE documents SET origins = ? WHERE url = ?", [json.dumps(["peerB"]), databases[0]]
        )
        repo.db.conn.commit()
        held = store.held_urls(repo, "Databases", "peerB")
        assert set(held) == set(databases[1:]) | {"http://127.0.0.9/rejected", "http://127.0.0.9/sub"}
        assert not set(held) & set(mathematics)
        assert databases[0] in store.held_urls(repo, "Databases", "peerC")


def test_settings_refuse_a_filter_outside_the_wire_limits():
    with pytest.raises(ValueError, match="held_filter_max_bytes"):
        CooperationSettings(held_filter_max_bytes=65537)
    with pytest.raises(ValueError, match="held_filter_fp_rate"):
        CooperationSettings(held_filter_fp_rate=1.0)


@pytest.mark.trio
async def test_provider_leaves_out_held_urls_and_the_asker_pools_the_rest(tmp_path):
    with trio.fail_after(60):
        async with running_nodes(tmp_path, 2, start=False) as (a, b):
            b.protocols.serve(RESULTS, ResultSyncRequest, b.results.answer)
            offered = own_urls(b.repo, "Databases")
            held = offered[::3]
            hold_copies(a.repo, held, "Databases")
            bloom = await a.results.held_filter(b.peer_id, "Databases")
            assert bloom is not None and all(url in bloom for url in held)

            plain = await a.protocols.fetch_results(b.peer_id, "Databases", 0, 200)
            filtered = await a.protocols.fetch_results(b.peer_id, "Databases", 0, 200, bloom)
            assert [i.result.url for i in plain.items] == offered
            sent = [i.result.url for i in filtered.items]
            assert not set(sent) & set(held) and len(sent) >= len(offered) - len(held) - 1
            assert filtered.next_cursor == plain.next_cursor

            added = await a.results.pull(b.peer_id, "Databases")
            assert added == len(sent)
            origins = [a.repo.document_by_url(url)["origins"] for url in held]
            assert all(b.peer_id not in o for o in origins)


@pytest.mark.trio
async def test_filter_claiming_everything_costs_a_bounded_scan_and_moves_the_cursor(tmp_path):
    with trio.fail_after(60):
        async with running_nodes(tmp_path, 2, start=False, crawled=40) as (a, b):
            everything = HeldFilter(b"\xff" * 16, 1)
            limit = 5
            page = await b.results.serve("Databases", 0, limit, a.peer_id, everything)
            ids = [
                row[0]
                for row in b.repo.db.execute(
                    "SELECT id FROM documents WHERE origin IS NULL AND topic = 'Databases' ORDER BY id"
                )
            ]
            assert page.items == () and page.more
            assert page.next_cursor == ids[HELD_SCAN * limit]
            rest = await b.results.serve(
                "Databases", page.next_cursor, 100, a.peer_id, HeldFilter(b"\x00", 1)
            )
            assert [i.result.url for i in rest.items] == own_urls(b.repo, "Databases")[
                HELD_SCAN * limit + 1 :
            ]


@pytest.mark.trio
async def test_no_filter_is_sent_when_switched_off(tmp_path):
    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        hold_copies(a.repo, own_urls(b.repo, "Databases"), "Databases")
        a.settings = dataclasses.replace(a.settings, held_filter_fp_rate=0.0)
        assert await a.results.held_filter(b.peer_id, "Databases") is None


def test_held_urls_keep_the_newest_when_capped(tmp_path):
    path = tmp_path / "r.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        databases = own_urls(repo, "Databases")
        assert store.held_urls(repo, "Databases", "peerB", 3) == databases[::-1][:3]


@pytest.mark.trio
async def test_filter_goes_with_a_pull_only_when_asked_for(tmp_path):
    with trio.fail_after(60):
        async with running_nodes(tmp_path, 2, start=False) as (a, b):
            b.protocols.serve(RESULTS, ResultSyncRequest, b.results.answer)
            hold_copies(a.repo, own_urls(b.repo, "Databases")[::2], "Databases")
            sent = a.protocols.bytes_by_message

            before = sent["out result_sync_request"]
            await a.results.pull(b.peer_id, "Mathematics", with_filter=False)
            plain = sent["out result_sync_request"] - before
            await a.results.pull(b.peer_id, "Databases")
            filtered = sent["out result_sync_request"] - before - plain
            bloom = await a.results.held_filter(b.peer_id, "Databases")
            assert plain < 100 and filtered >= plain + len(bloom.bits)


@pytest.mark.trio
async def test_shared_results_carry_coarse_confidence_and_whole_second_fetch_times(tmp_path):
    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        b.repo.db.execute(
            "UPDATE documents SET confidence = 0.123456789 + id * 1e-7, fetched_at = 1700000000.4321 + id"
        )
        b.repo.db.conn.commit()
        page = await b.results.serve("Databases", 0, 100, a.peer_id)
        stored = {r["url"]: r for r in (b.repo.document_by_url(i.result.url) for i in page.items)}
        assert page.items
        for item in page.items:
            sent, row = item.result, stored[item.result.url]
            assert sent.confidence / CONFIDENCE_STEP == round(sent.confidence / CONFIDENCE_STEP)
            assert abs(sent.confidence - row["confidence"]) <= CONFIDENCE_STEP / 2
            assert sent.fetched_at == round(row["fetched_at"]) != row["fetched_at"]


@pytest.mark.trio
async def test_a_probe_sends_no_filter_when_the_peer_has_nothing_new_and_the_filtered_pull_follows_news(
    tmp_path,
):
    with trio.fail_after(60):
        async with running_nodes(tmp_path, 2, start=False) as (a, b):
            b.protocols.serve(RESULTS, ResultSyncRequest, b.results.answer)
            offered = own_urls(b.repo, "Databases")
            held = offered[::3]
            hold_copies(a.repo, held, "Databases")
            asked, answered = "out result_sync_request", "in result_sync_response"
            sent, received = a.protocols.bytes_by_message, a.protocols.bytes_by_message

            before = sent[asked]
            added = await a.results.pull(b.peer_id, "Databases", probe=True)
            # the news is pulled with the filter: nothing held comes back
            assert added >= len(offered) - len(held) - 1
            assert all(b.peer_id not in a.repo.document_by_url(url)["origins"] for url in held)
            bloom = await a.results.held_filter(b.peer_id, "Databases")
            assert sent[asked] - before > len(bloom.bits)

            before, before_in = sent[asked], received[answered]
            cursor = store.cursor_of(a.repo, b.peer_id, "Databases")
            assert await a.results.pull(b.peer_id, "Databases", probe=True) is None
            probe = ResultSyncRequest("Databases", cursor, 1, HOLDS_EVERYTHING)
            assert sent[asked] - before == len(encode_frame(probe, ResultSyncRequest.MAX_FRAME))
            assert received[answered] - before_in < 100  # an empty page: the full filter never went


def test_community_scenario_counts_results_a_peer_sent_that_the_node_held_already(tmp_path):
    from simnet.scenarios.community import duplicate_results, read_only

    path = tmp_path / "r.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        first, second, third = own_urls(repo, "Databases")[:3]
        pooled = "UPDATE documents SET origin = 'peerB', origins = ? WHERE url = ?"
        repo.db.execute("UPDATE documents SET origins = ? WHERE url = ?", ['["peerB"]', first])
        repo.db.execute(pooled, ['["peerB"]', second])
        repo.db.execute(pooled, ['["peerB", "peerC"]', third])
        repo.db.conn.commit()
    with read_only(path) as repo:
        assert duplicate_results(repo) == 2  # the own one a peer sent, and the pooled one two peers sent


@pytest.mark.trio
async def test_a_node_offers_peers_only_as_many_results_as_share_results_allows(tmp_path):
    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        whole = await b.results.serve("Databases", 0, 100, a.peer_id)
        b.settings = dataclasses.replace(b.settings, share_results=3)
        capped = await b.results.serve("Databases", 0, 100, a.peer_id)
        b.settings = dataclasses.replace(b.settings, share_results=0)
        none = await b.results.serve("Databases", 0, 100, a.peer_id)
    assert len(whole.items) > 3 and len(capped.items) == 3 and none.items == ()


@pytest.mark.trio
async def test_a_synced_result_is_filed_in_the_subtopic_its_crawler_filed_it_in_when_the_asker_has_it(
    tmp_path,
):
    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        hold_copies(b.repo, ["http://127.0.0.9/postgres", "http://127.0.0.9/mysql"], "Databases/Postgres")
        b.repo.db.execute("UPDATE documents SET topic = 'Databases/MySQL' WHERE url LIKE '%mysql'")
        b.repo.db.conn.commit()
        page = await b.results.serve("Databases", 0, 100, a.peer_id)
        sent = {item.result.url: item.result.topic for item in page.items}
        assert sent["http://127.0.0.9/postgres"] == "Databases/Postgres"
        assert sent["http://127.0.0.9/mysql"] == "Databases/MySQL"
        assert set(sent.values()) == {"Databases", "Databases/Postgres", "Databases/MySQL"}
        taxonomy = synthetic_taxonomy(0)
        store_taxonomy(a.repo, dataclasses.replace(taxonomy, topics=(*taxonomy.topics, "Databases/Postgres")))
        store.pool_results(a.repo, b.peer_id, "Databases", [item.result for item in page.items], 1)
        filed = {url: a.repo.document_by_url(url)["topic"] for url in sent}
    # the asker has Databases/Postgres but no Databases/MySQL: that one stays in the topic synced
    assert filed["http://127.0.0.9/postgres"] == "Databases/Postgres"
    assert filed["http://127.0.0.9/mysql"] == "Databases"
    assert {filed[url] for url, topic in sent.items() if topic == "Databases"} == {"Databases"}
