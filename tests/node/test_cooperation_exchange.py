"""Cooperation over real libp2p hosts on loopback, in one process, with small synthetic repositories."""

from __future__ import annotations

import dataclasses
from contextlib import asynccontextmanager

import numpy as np
import pytest
import trio

from crawler.repository import Repository
from metamodels.restrictive import dismissed_count
from node.cooperation import filtering, store
from node.cooperation.backoff import Backoff
from node.cooperation.meta_protocol import MetaProtocol
from node.cooperation.refinement import local_centroids
from node.cooperation.service import Cooperation
from node.cooperation.testing import add_crawled, add_mixed, make_repository, running_nodes
from node.cooperation.wiremodels import centroids_payload, linear_from_payload
from p2p.messages.meta_classifier import CvEntry

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


async def wait_for(condition, timeout: float = 30.0) -> None:
    with trio.fail_after(timeout):
        while not await condition():
            await trio.sleep(0.1)


@pytest.mark.trio
async def test_peers_sharing_topics_find_each_other_and_exchange_signed_models(tmp_path):
    async with running_nodes(tmp_path, 2) as (a, b):

        async def received() -> bool:
            return len(await a.models()) >= 4 and len(await b.models()) >= 4

        await wait_for(received)
        rows = await a.models("Databases")
        by_origin = {r["origin"]: r for r in rows}
        assert set(by_origin) == {"local", b.peer_id}
        assert by_origin[b.peer_id]["role"] == "received"
        assert by_origin[b.peer_id]["accuracy_local"] > 0.7
        assert by_origin[b.peer_id]["weight_measured"] > 0
        assert a.community("Databases") == [b.peer_id]
        peers = await a.peers()
        assert peers[0]["shared_topics"] == ["Databases", "Mathematics"]
        assert peers[0]["bytes_in"] > 0 and peers[0]["rejected"] == []


@pytest.mark.trio
async def test_hostile_peer_sending_label_flipped_models_gets_weight_zero(tmp_path):
    async with running_nodes(tmp_path, 3, hostile=[2]) as (a, b, bad):

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 2

        await wait_for(received)
        result = await a.meta_protocol.build("Databases", loss=0.2)
        received = {r["origin"]: r for r in await a.models("Databases")}
        assert received[bad.peer_id]["accuracy_local"] < 0.5
        assert received[bad.peer_id]["weight"] == 0.0
        members = {m["origin"]: m["weight"] for m in (await a.meta("Databases"))["models"]}
        assert members.get(bad.peer_id, 0.0) == 0.0
        assert members[b.peer_id] > 0.0
        assert result["measured"]["accuracy"] > 0.8


@pytest.mark.trio
async def test_models_listing_weight_is_the_weight_the_last_meta_build_gave(tmp_path):
    async with running_nodes(tmp_path, 3, hostile=[2]) as (a, b, bad):

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 2

        await wait_for(received)
        await a.meta_protocol.build("Databases", loss=0.2)
        rows = {r["origin"]: r for r in await a.models("Databases")}
        members = {m["origin"]: m["weight"] for m in (await a.meta("Databases"))["models"]}
        assert {origin: rows[origin]["weight"] for origin in members} == members
        assert rows[bad.peer_id]["weight"] == 0.0 and rows[bad.peer_id]["weight_measured"] == 0.0
        # the label-measured weight is still listed beside it, and differs: the build weighs by agreement
        assert rows[b.peer_id]["weight_measured"] > 0.0
        assert rows[b.peer_id]["weight"] != rows[b.peer_id]["weight_measured"]


@pytest.mark.trio
async def test_meta_build_filters_the_repository_at_the_chosen_loss(tmp_path):
    async with running_nodes(tmp_path, 3) as (a, _b, _c):

        async def received() -> bool:
            return len([r for r in await a.models("Mathematics") if r["role"] == "received"]) == 2

        await wait_for(received)
        built = await a.meta_protocol.build("Mathematics", loss=0.3)
        assert built["peers_used"] >= 1 and built["peers_needed"] >= 1
        answer = await a.set_loss("Mathematics", 0.5)
        judged = answer["kept"] + answer["rejected"] + answer["abstained"]
        assert answer["abstained"] == dismissed_count(judged, 0.5) and answer["kept"] > 0
        # the node's counts are its documents' verdicts: every document it filtered has one of the three
        counted = await a.meta("Mathematics")
        assert sum(counted[key] for key in ("kept", "rejected", "abstained", "unjudged")) >= judged
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            verdicts = {
                row[0] for row in repo.db.execute("SELECT verdict FROM documents WHERE topic = 'Mathematics'")
            }
        # a peer's results pooled after the filtering have no verdict until the next round judges them
        verdicts.discard(None)
        assert verdicts <= {"accepted", "abstained", "rejected"} and "abstained" in verdicts


@pytest.mark.trio
async def test_a_new_loss_builds_the_meta_classifier_again_for_it(tmp_path, monkeypatch):
    from node.cooperation import latent_meta

    # the community's model accepts 30% of the node's documents that the local model rejects: it votes at a
    # loss of 0.3 or more, and is left out below
    monkeypatch.setattr(latent_meta, "looser_share", lambda *args: 0.3)
    async with running_nodes(tmp_path, 3) as (a, _b, _c):

        async def received() -> bool:
            return len([r for r in await a.models("Mathematics") if r["role"] == "received"]) == 2

        await wait_for(received)
        await a.meta_protocol.build("Mathematics", loss=0.3)
        voters = lambda meta: [len(v["models"]) for v in meta["combination"]["voters"]]  # noqa: E731
        assert voters(await a.meta("Mathematics")) == [1, 3]
        answer = await a.set_loss("Mathematics", 0.2)
        meta = await a.meta("Mathematics")
        assert meta["loss"] == 0.2 and voters(meta) == [1] and voters(answer) == [1]
        judged = answer["kept"] + answer["rejected"] + answer["abstained"]
        assert 0 < judged <= sum(meta[key] for key in ("kept", "rejected", "abstained", "unjudged"))
        await a.set_loss("Mathematics", 0.4)
        assert voters(await a.meta("Mathematics")) == [1, 3]


@pytest.mark.trio
async def test_results_of_community_peers_are_pooled_with_their_origin(tmp_path):
    async with running_nodes(tmp_path, 2) as (a, b):

        async def pooled() -> bool:
            return (await a.stats())["results_pooled"] > 0

        await wait_for(pooled)
        await trio.sleep(1.5)
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            pooled = dict(repo.db.execute("SELECT url, origin FROM documents WHERE origin IS NOT NULL"))
        with Repository(tmp_path / "node1" / "repository.sqlite") as repo:
            verdicts = dict(repo.db.execute("SELECT url, verdict FROM documents WHERE origin IS NULL"))
        assert set(pooled.values()) == {b.peer_id}
        # b offers what its restrictive filter keeps, and every such document of a judged stretch
        assert {verdicts[url] for url in pooled} == {"accepted"}
        assert len(pooled) >= 0.5 * sum(v == "accepted" for v in verdicts.values())


@pytest.mark.trio
async def test_a_model_of_another_feature_space_is_refused_and_counted_not_measured(tmp_path):
    """Measuring one failed every cooperation round of the node that kept it."""
    from dataclasses import replace

    from metamodels.features import FeatureConfig
    from node.cooperation.wiremodels import linear_payload
    from p2p.signing import sign_model

    async with running_nodes(tmp_path, 2, start=False) as (a, b):
        await b.exchange.refresh_local_models(now=True)
        own = linear_from_payload((await b.exchange.local_model("Databases")).model.payload)
        kept = own.indices[own.indices < 1024]
        other_space = replace(
            own, config=FeatureConfig(n_features=1024), indices=kept, weights=own.weights[: kept.size]
        )
        signed = sign_model(b.key, linear_payload(other_space, "Databases", 7, b.peer_id))
        assert a.exchange.checked_model(b.peer_id, signed, "Databases", "linear") is None
        assert a.protocols.guard.ledger.record_of(b.peer_id).reasons == {"bad_model": 1}
        fine = sign_model(b.key, linear_payload(own, "Databases", 8, b.peer_id))
        assert a.exchange.checked_model(b.peer_id, fine, "Databases", "linear") is fine


@pytest.mark.trio
async def test_a_meta_request_naming_a_peer_many_times_fetches_its_model_once(tmp_path):
    """A request naming one honest peer 254 times had the node fetch that peer's model 254 times, and the
    peer banned the node for it."""
    from p2p.messages.meta_classifier import MetaRequest

    async with running_nodes(tmp_path, 3, start=False) as (a, b, c):
        fetched: list[str] = []

        async def fetch_model(peer, topic):
            fetched.append(peer)

        a.exchange.fetch_model = fetch_model
        a.known_peers = lambda: {b.peer_id, c.peer_id}
        request = MetaRequest(
            "s" * 16, "Databases", b.peer_id, "estimate", 0.2, None, (b.peer_id,) + (c.peer_id,) * 254
        )
        await a.meta_protocol.answer(b.peer_id, request)
        assert fetched == [b.peer_id, c.peer_id]


async def wait_for_databases_community(a: Cooperation, b: Cooperation) -> None:
    """Until `a` counts `b` in the community of Databases, the topic the clustering tests refine."""

    async def community() -> bool:
        return a.community("Databases") == [b.peer_id]

    await wait_for(community)


@pytest.mark.trio
async def test_collaborative_clustering_proposal_becomes_a_subtopic(tmp_path):
    async with running_nodes(tmp_path, 2, crawled=30) as (a, b):
        await wait_for_databases_community(a, b)
        proposals = await a.refinement.refine("Databases", 2)
        assert proposals and all(p["status"] == "open" for p in proposals)
        assert sum(p["size"] for p in proposals) > 0
        for reserved in ("OTHERS", "others", "x" * 81):  # a taxonomy's negatives folder; a name too long
            with pytest.raises(ValueError, match=r"negative examples|at most 80"):
                await a.refinement.accept_proposal(proposals[0]["id"], name=reserved)
        # unnamed, it is named after its top terms, also when stored with the labels of old ("a, b, c")
        first = proposals[0]
        await a.refinement.layer.db(
            store.set_proposal_status, first["id"], "open", ", ".join(first["top_terms"][:3])
        )
        accepted = await a.refinement.accept_proposal(first["id"])
        key = "Databases/" + "-".join(first["top_terms"][:3])
        assert accepted["status"] == "accepted" and accepted["subtopic"] == key
        for unknown in ("x", "-1", str(2**64)):  # 2**64 overflowed SQLite's integer: an internal error
            with pytest.raises(KeyError, match="no proposal"):
                await a.refinement.reject_proposal(unknown)
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            assert (
                repo.db.execute("SELECT parent FROM topics WHERE key = ?", [key]).fetchone()[0] == "Databases"
            )
            moved = repo.db.execute("SELECT count(*) FROM documents WHERE topic = ?", [key]).fetchone()[0]
        assert moved == first["size"]


@pytest.mark.trio
async def test_refining_a_topic_again_clusters_its_own_documents_not_its_accepted_subtopics(tmp_path):
    async with running_nodes(tmp_path, 2, crawled=30) as (a, b):
        await wait_for_databases_community(a, b)
        first = await a.refinement.refine("Databases", 2)
        await a.refinement.accept_proposal(min(first, key=lambda p: p["size"])["id"], name="Indexes")
        again = await a.refinement.refine("Databases", 2)
        sent = await a.refinement.on_centroids(b.peer_id, "Databases", 2)  # what a peer clusters with
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            moved = {
                i for (i,) in repo.db.execute("SELECT id FROM documents WHERE topic = 'Databases/Indexes'")
            }
            proposed = {i for p in again for i in store.load_proposals(repo, None, p["id"])[0]["doc_ids"]}
            own = filtering.topic_documents(repo, "Databases", include_pooled=False, subtopics=False)
    assert moved and proposed and not moved & proposed
    assert all(p["status"] == "open" for p in again)  # the accepted one is not listed among them
    expected = local_centroids(a.featurizer.transform(list(own.texts)), 2, a.featurizer)
    assert sent is not None
    assert np.array_equal(
        sent.payload.weight_matrix(), centroids_payload(expected, "Databases", 2, a.peer_id).weight_matrix()
    )


@pytest.mark.trio
async def test_an_accepted_subtopic_learns_from_its_cluster_and_gets_a_meta_classifier(tmp_path):
    """An accepted subtopic had no training document, hence no model: a meta build for it was refused with
    "import training documents for it first". Its cluster's most confident pages now train it, the round
    trains its model, and a build works from that model alone (the peer has no such subtopic)."""
    key = "Databases/Transactions"
    async with running_nodes(tmp_path, 2, crawled=30) as (a, b):
        await wait_for_databases_community(a, b)
        proposal = max(await a.refinement.refine("Databases", 2), key=lambda p: p["size"])
        accepted = await a.refinement.accept_proposal(proposal["id"], name="Transactions")
        assert accepted["subtopic"] == key and accepted["training_documents"] >= 2
        assert "meta build --topic Databases/Transactions" in accepted["learns"]

        async def trained() -> bool:
            return await a.exchange.local_model(key) is not None and a.has_meta(key)

        await wait_for(trained)  # the round the acceptance started
        built = await a.meta_protocol.build(key, loss=0.2)
        assert built["peers_used"] == 0 and built["measured"]["accuracy"] > 0.5
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            ranked = [
                repo.document(i) for i in store.load_proposals(repo, None, proposal["id"])[0]["doc_ids"]
            ]
            examples = repo.db.execute(
                "SELECT url FROM training_documents WHERE topic = ? AND source = 'refine'", [key]
            ).fetchall()
    assert [d["title"] for d in ranked[:5]] == proposal["sample_titles"]  # most confident first
    assert {url for (url,) in examples} == {d["url"] for d in ranked[: len(examples)]}


@pytest.mark.trio
async def test_a_peer_lying_in_its_cross_validation_reports_cannot_lift_a_hostile_model(tmp_path):
    async with running_nodes(tmp_path, 4, hostile=[2]) as (a, b, bad, liar):

        def lie(topic, models, versions):
            # every model of the hostile peer "perfect", every honest one "always wrong"
            entries = tuple(
                CvEntry(origin, versions[origin], 50, 0 if origin == bad.peer_id else 50) for origin in models
            )
            return entries, ()

        liar.meta_protocol._cross_validate = lie

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 3

        await wait_for(received)
        # an error goal makes the initiator ask the community (the estimate phase) whatever it measured
        result = await a.meta_protocol.build("Databases", loss=0.2, error_goal=0.3)
        rows = {r["origin"]: r for r in await a.models("Databases")}
        assert rows[bad.peer_id]["weight"] == 0.0 and rows[bad.peer_id]["weight_measured"] == 0.0
        assert rows[bad.peer_id]["reporters"] >= 2
        assert rows[b.peer_id]["weight_measured"] > 0.0 and rows[b.peer_id]["accuracy_community"] > 0.8
        assert rows["local"]["weight"] > 0.0
        members = {m["origin"]: m["weight"] for m in (await a.meta("Databases"))["models"]}
        assert members.get(bad.peer_id, 0.0) == 0.0
        assert result["measured"]["accuracy"] > 0.8


@pytest.mark.trio
async def test_an_error_goal_estimate_counts_the_own_model_among_the_models_it_combines(
    tmp_path, monkeypatch
):
    from node.cooperation import weighing

    def measured(member, accuracy):  # what the node and its community measured of each model, set here
        return lambda *args, **kwargs: dataclasses.replace(
            member(*args, **kwargs), community_accuracy=accuracy
        )

    # peers' models right on every document, the node's own one on 70%: alone it misses an error goal of 0.05
    monkeypatch.setattr(weighing, "local_member", measured(weighing.local_member, 0.7))
    monkeypatch.setattr(weighing, "received_member", measured(weighing.received_member, 1.0))
    async with running_nodes(tmp_path, 3) as (a, _b, _c):

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 2

        await wait_for(received)
        built = await a.meta_protocol.build("Databases", loss=0.2, error_goal=0.05)
    # the peers' models alone suggested one model suffices, and the own model was built alone
    assert built["peers_needed"] >= 1 and built["peers_used"] >= 1
    assert built["error_goal"] == 0.05


@pytest.mark.trio
async def test_the_configured_error_goal_is_the_goal_of_a_build_that_names_none(tmp_path, monkeypatch):
    import node.cooperation.meta_protocol as meta_protocol

    goals = []

    def recorded(*args, **kwargs):
        goals.append(kwargs["max_error"])
        return peers_needed(*args, **kwargs)

    peers_needed = meta_protocol.peers_needed
    monkeypatch.setattr(meta_protocol, "peers_needed", recorded)
    async with running_nodes(tmp_path, 2) as (a, _b):

        async def received() -> bool:
            return any(r["role"] == "received" for r in await a.models("Databases"))

        async def goals_of(**goal: float) -> list[float | None]:  # rounds may rebuild in the background
            before = len(goals)
            await a.meta_protocol.build("Databases", loss=0.2, **goal)
            return goals[before:]

        await wait_for(received)
        unset = await goals_of()
        a.settings = dataclasses.replace(a.settings, error_goal=0.3)
        configured = await goals_of()
        asked = await goals_of(error_goal=0.1)  # the request's own goal comes first
    assert set(unset) == {None} and set(configured) == {0.3} and 0.1 in asked


@pytest.mark.trio
async def test_a_build_without_a_loss_keeps_the_topics_loss_else_takes_the_configured_default(tmp_path):
    async with running_nodes(tmp_path, 1, start=False) as (a,):  # no round builds one meanwhile
        a.settings = dataclasses.replace(a.settings, default_loss=0.25)
        await a.meta_protocol.build("Databases")
        first = (await a.meta("Databases"))["loss"]
        await a.set_loss("Databases", 0.35)
        await a.meta_protocol.build("Databases")
        kept = (await a.meta("Databases"))["loss"]
        await a.meta_protocol.build("Databases", loss=0.1)
        asked = (await a.meta("Databases"))["loss"]
    assert (first, kept, asked) == (0.25, 0.35, 0.1)


@pytest.mark.trio
async def test_meta_build_peers_offer_models_the_initiator_holds_by_reference(tmp_path):
    async with running_nodes(tmp_path, 3) as (a, _b, _c):

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 2

        await wait_for(received)
        before = dict(a.protocols.bytes_by_message)
        sent = []
        ask = a.protocols.meta_request

        async def recorded(peer, request):
            sent.append((str(peer), request))
            return await ask(peer, request)

        a.protocols.meta_request = recorded
        built = await a.meta_protocol.build("Databases", loss=0.2)
        offers = a.protocols.bytes_by_message["in meta_offer"] - before.get("in meta_offer", 0)
        assert built["peers_used"] == 2
        assert 0 < offers < 2 * 100  # two offers naming a version, no model re-sent
        builds = [(peer, r) for peer, r in sent if r.phase == "build"]
        # each peer is told about its own model only, not about every model the initiator holds
        assert sorted(peer for peer, _ in builds) == sorted([_b.peer_id, _c.peer_id])
        assert all([h.origin for h in r.held] == [peer] for peer, r in builds)
        members = {m["origin"] for m in (await a.meta("Databases"))["models"]}
        assert members == {"local", _b.peer_id, _c.peer_id}


def test_results_offered_leave_out_the_askers_own_and_stop_at_the_first_unjudged(tmp_path):
    path = tmp_path / "r.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        query = "SELECT id FROM documents WHERE topic = 'Databases' ORDER BY id"
        ids = [r[0] for r in repo.db.execute(query)]
        repo.db.execute("UPDATE documents SET verdict = 'accepted'")
        repo.db.execute("UPDATE documents SET origins = ? WHERE id = ?", ['["peerB"]', ids[0]])
        repo.db.execute("UPDATE documents SET verdict = 'abstained' WHERE id = ?", [ids[1]])
        repo.db.execute("UPDATE documents SET verdict = NULL WHERE id = ?", [ids[4]])
        repo.db.conn.commit()
        every = [i for i, _ in store.own_results(repo, "Databases", 0, 100)]
        assert every == ids
        assert [i for i, _ in store.own_results(repo, "Databases", 0, 100, "peerB")] == ids[1:]
        kept = store.own_results(repo, "Databases", 0, 100, "peerB", kept_only=True)
        assert [i for i, _ in kept] == ids[2:4]
        assert store.unjudged(repo, "Databases") == 1
        # another peer claims ids[2] as its own result too: the node still offers it (a hostile peer with
        # a small id had stopped the node sharing every page it claimed)
        repo.db.execute("UPDATE documents SET origins = ? WHERE id = ?", ['["peerA"]', ids[2]])
        repo.db.conn.commit()
        assert [i for i, _ in store.own_results(repo, "Databases", 0, 100, "peerB")] == ids[1:]


def test_only_a_topics_most_confident_results_are_offered_when_the_user_caps_them(tmp_path):
    path = tmp_path / "r.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        store.ensure_schema(repo)
        repo.db.execute("UPDATE documents SET confidence = (id * 7 % 11) / 10.0")  # not in id order
        repo.db.conn.commit()
        query = "SELECT id, confidence FROM documents WHERE topic = 'Databases' ORDER BY id"
        rows = repo.db.execute(query).fetchall()
        ids = [i for i, _ in rows]
        best_two = sorted(i for i, _ in sorted(rows, key=lambda r: (-r[1], r[0]))[:2])
        assert best_two != ids[:2]
        assert [i for i, _ in store.own_results(repo, "Databases", 0, 100, best=2)] == best_two
        assert [i for i, _ in store.own_results(repo, "Databases", max(best_two), 100, best=2)] == []
        assert store.own_results(repo, "Databases", 0, 100, best=0) == []
        assert [i for i, _ in store.own_results(repo, "Databases", 0, 100, best=len(ids))] == ids


def test_backoff_doubles_the_rounds_skipped_up_to_the_cap_and_resets_on_news():
    backoff = Backoff()
    skipped = []
    for round_no in range(5):
        backoff.idle(round_no, cap=4)
        skipped.append(backoff.skip_until - round_no)
    assert skipped == [1, 2, 4, 4, 4]
    backoff.busy()
    assert backoff.skip_until == 0 and backoff.streak == 0


def test_only_a_pull_that_brought_results_is_news_for_the_next_pulls_filter():
    backoff = Backoff()
    assert backoff.news  # the first pull carries the filter
    backoff.pulled(5, 0, cap=4)
    assert backoff.news and backoff.streak == 0
    backoff.pulled(0, 1, cap=4)  # the cursor moved over documents the peer's filter dropped
    assert not backoff.news and backoff.streak == 0 and backoff.skip_until == 0
    backoff.pulled(None, 2, cap=4)
    assert not backoff.news and backoff.skip_until == 3
    backoff.pulled(3, 3, cap=4)
    assert backoff.news and backoff.streak == 0


@pytest.mark.trio
async def test_a_round_after_a_meta_build_does_not_ask_the_community_about_the_same_models_again(tmp_path):
    async with running_nodes(tmp_path, 3) as (a, _b, _c):

        async def no_reports() -> list[str]:
            return []

        async def unmeasured(topic: str) -> bool:
            return False  # as on a node with few labels: the weights need the community's reports

        # the background rounds of `a` leave the estimates to this test
        a.meta_protocol.gather_reports = no_reports

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 2

        await wait_for(received)
        a.meta_protocol._measured_here = unmeasured
        sessions = []
        estimate = a.meta_protocol._estimate

        async def recorded(topic, *args):
            sessions.append(topic)
            return await estimate(topic, *args)

        a.meta_protocol._estimate = recorded
        await a.meta_protocol.build("Databases", loss=0.2)
        assert sessions == ["Databases"]
        for _ in range(2):  # the first round notes the models held, the second finds them settled
            await MetaProtocol.gather_reports(a.meta_protocol)
        assert sessions.count("Databases") == 1


def databases_filtering(coop, path):
    """(accepted, claimed) per document filed in Databases: whether its verdict is "accepted", and whether
    the Mathematics meta-classifier claims it more strongly than the Databases one, which accepts it."""
    with Repository(path) as repo:
        rows = repo.db.execute(
            "SELECT title, text, verdict FROM documents WHERE topic = 'Databases' AND origin IS NULL"
        ).fetchall()
    texts = [f"{title}\n{text}" for title, text, _ in rows]
    own, rival = coop.meta_confidence("Databases", texts), coop.meta_confidence("Mathematics", texts)
    accepted = np.array([verdict == "accepted" for *_, verdict in rows])
    return accepted, (own > 0) & (rival > own), own > 0


@asynccontextmanager
async def filtered_node_with_mixed_pages(tmp_path):
    """A node without peers whose Databases folder holds pages on both topics, after a meta build;
    yields the node and its repository's path."""
    path = tmp_path / "node0" / "repository.sqlite"
    async with running_nodes(tmp_path, 1, start=False) as (node,):
        with Repository(path) as repo:
            add_mixed(repo, "Databases")
        await node.meta_protocol.build("Databases", loss=0.2)
        yield node, path


@pytest.mark.trio
async def test_filtering_accepts_a_document_only_where_no_sibling_topic_claims_it_more_strongly(tmp_path):
    async with filtered_node_with_mixed_pages(tmp_path) as (a, path):
        accepted, claimed, own_accepts = databases_filtering(a, path)
        assert claimed.any()  # the fixture holds documents both topics accept
        assert not (accepted & claimed).any()
        assert accepted.any() and (accepted <= own_accepts).all()
        assert (await a.meta("Databases"))["rival_topics"] == ["Mathematics"]


@pytest.mark.trio
async def test_a_rival_topics_new_meta_classifier_filters_the_topic_again(tmp_path):
    async with filtered_node_with_mixed_pages(tmp_path) as (a, path):
        with Repository(path) as repo:
            repo.db.execute("UPDATE documents SET verdict = 'accepted' WHERE topic = 'Databases'")
        await a.rebuild_meta("Mathematics")
        accepted, claimed, _ = databases_filtering(a, path)
        assert claimed.any() and not (accepted & claimed).any()


@pytest.mark.trio
async def test_the_meta_classifier_is_rebuilt_on_a_new_model_or_a_grown_crawl_not_every_round(tmp_path):
    async with running_nodes(tmp_path, 2) as (a, _b):
        rebuilt: list[str] = []
        rebuild = a.rebuild_meta

        async def counting(topic: str) -> None:
            rebuilt.append(topic)
            await rebuild(topic)

        a.rebuild_meta = counting

        async def received() -> bool:
            return len([r for r in await a.models("Databases") if r["role"] == "received"]) == 1

        await wait_for(received)
        # within a round the stale topic is rebuilt, and a round later the peers' reports weigh the models
        start = a.rounds
        await wait_for(lambda: _after(a, start + 3))
        assert "Databases" in rebuilt
        rebuilt.clear()
        start = a.rounds
        await wait_for(lambda: _after(a, start + 6))
        assert rebuilt == []  # nothing new arrived: an idle node does not rebuild (it did every round)

        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:  # the crawl doubles
            add_crawled(repo, node=50, per_topic=20)
        start = a.rounds
        await wait_for(lambda: _after(a, start + 2))
        assert "Databases" in rebuilt  # its latent class models are of the node's own documents

        rebuilt.clear()
        a._built_on.clear()  # as after a restart, which loads the stored meta-classifiers
        await a._load_metas()
        with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
            add_crawled(repo, node=51, per_topic=40)
        start = a.rounds
        await wait_for(lambda: _after(a, start + 2))
        assert "Databases" in rebuilt


async def _after(coop: Cooperation, rounds: int) -> bool:
    return coop.rounds >= rounds


@pytest.mark.trio
async def test_a_blocked_peer_loses_its_say_and_its_results_and_stays_out_until_unblocked(tmp_path):
    async with running_nodes(tmp_path, 3) as (a, b, c):

        async def holds_both() -> bool:
            origins = {r["origin"] for r in await a.models("Databases")}
            return {b.peer_id, c.peer_id} <= origins and (await a.stats())["results_pooled"] > 0

        await wait_for(holds_both)
        await a.meta_protocol.build("Databases", loss=0.2)
        assert b.peer_id in {m["origin"] for m in (await a.meta("Databases"))["models"]}

        await a.network.block(b.peer_id)
        forgotten = await a.forget_peer(b.peer_id)
        assert forgotten["models_forgotten"] == 2 and "Databases" in forgotten["meta_rebuilt"]

        def from_b() -> int:
            with Repository(tmp_path / "node0" / "repository.sqlite") as repo:
                return repo.db.execute(
                    "SELECT count(*) FROM documents WHERE origin = ?", [b.peer_id]
                ).fetchone()[0]

        async def b_is_out() -> bool:
            models = {r["origin"] for r in await a.models()}
            members = {m["origin"] for m in (await a.meta("Databases"))["models"]}
            return b.peer_id not in models | members and c.peer_id in models and from_b() == 0

        assert await b_is_out()
        for _ in range(4):  # b goes on announcing and offering results; c goes on listing it as a neighbour
            await trio.sleep(1.0)
            assert await b_is_out()
            assert b.peer_id not in a.known_peers() and b.peer_id not in a.community("Databases")

        a.network.unblock(b.peer_id)

        async def b_is_back() -> bool:
            return b.peer_id in {r["origin"] for r in await a.models()} and from_b() > 0

        await wait_for(b_is_back, timeout=60)
