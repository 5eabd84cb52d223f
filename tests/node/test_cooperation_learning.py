"""The cooperation layer's local steps: model wire form, weights on local data, the meta focus wrapper."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from crawler.policy import PageVerdict
from crawler.repository import Repository, StoredPage
from crawler.search import text_document
from crawler.taxonomy import escape_name, subtopic_name
from metamodels.features import FeatureConfig, Featurizer
from metamodels.restrictive import loss_targeted_decisions
from node.cooperation import filtering, latent_meta, previews, refinement, training, weighing
from node.cooperation.focus import MetaFocus
from node.cooperation.testing import add_document, make_repository
from node.cooperation.wiremodels import coarse, flipped, linear_from_payload, linear_payload
from p2p.signing import LocalEd25519Key, sign_model, verify_model
from p2p.value_checks import check_topic


def labelled(tmp_path, node: int, topic: str = "Databases") -> training.LabelledData:
    path = tmp_path / f"n{node}.sqlite"
    make_repository(path, node)
    with Repository(path) as repo:
        rows = training.training_rows(repo)
    return training.labelled_data(rows, topic, Featurizer(FeatureConfig()))


def test_linear_model_survives_the_signed_wire_form(tmp_path):
    data = labelled(tmp_path, 0)
    model = training.train_local(data)
    key = LocalEd25519Key(b"k" * 32)
    signed = sign_model(key, linear_payload(model, "Databases", 3, key.peer_id))
    back = linear_from_payload(verify_model(signed))
    # weights travel with 8 significant bits: each is off by at most 2**-9 of itself
    bound = np.abs(data.X) @ np.abs(model.weight_column()) / model.calibration.scale * 2.0**-9
    gap = np.abs(back.confidence(data.X) - model.confidence(data.X))
    assert np.all(gap <= bound.toarray().ravel() + 1e-6)
    assert back.training_ids == tuple(training.training_key(i) for i in model.training_ids)
    assert all(len(i) == training.KEY_LENGTH == 7 for i in back.training_ids)
    _, tested, _ = weighing.measure(back, data)
    assert tested == 0  # the keys exclude every training document, as the URLs did


def test_training_keys_are_short_stable_and_distinct():
    urls = [f"http://127.0.0.{i % 7}:8000/page-{i}.html" for i in range(2000)]
    keys = [training.training_key(u) for u in urls]
    assert len(set(keys)) == len(urls) and all(k.startswith("#") and len(k) == 7 for k in keys)
    assert [training.training_key(k) for k in keys] == keys


def test_coarse_weights_keep_sign_and_finiteness_within_relative_error():
    w = np.array([1.0, -0.3, 1e-30, 3.4e38, -0.123456, 7.0e-3], dtype=np.float32)
    c = coarse(w)
    assert np.all(np.isfinite(c)) and np.all(np.sign(c) == np.sign(w))
    assert np.all(np.abs(c / w - 1) <= 2.0**-8)
    assert np.all(c.view(np.uint32) & 0xFFFF == 0)


def test_pruned_model_keeps_decisions_on_own_documents(tmp_path):
    data = labelled(tmp_path, 0)
    model = training.train_local(data)
    X = data.X
    small = training.pruned(model, data, X, 0.2, 0.95, min_weights=8, min_documents=10)
    assert small.indices.size < model.indices.size
    full = loss_targeted_decisions(model.decision_function(X), 0.2)
    assert np.mean(loss_targeted_decisions(small.decision_function(X), 0.2) == full) >= 0.95
    assert training.pruned(model, data, X, 0.2, 1.0) is model


def test_flipped_model_measured_on_other_data_gets_weight_zero(tmp_path):
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    honest = training.train_local(other)
    good = weighing.received_member("peer", 1, honest, own)
    bad = weighing.received_member("bad", 1, flipped(honest), own)
    assert good.accuracy > 0.8 and good.weight > 0
    assert bad.accuracy < 0.2 and bad.weight == 0.0
    local = weighing.local_member("me", 1, training.train_local(own), own)
    meta = latent_meta.meta_classifier([local, good, bad])
    assert filtering.decision_accuracy(latent_meta.meta_scores(meta, own.X), own.labels, 0.0) > 0.8


def test_meta_focus_rejects_pages_the_meta_classifier_rejects():
    page = SimpleNamespace(parsed=SimpleNamespace(title="t", text="x"))
    policy = SimpleNamespace(
        taxonomy=None, score_pages=lambda pages: [PageVerdict("Databases", 0.4, True) for _ in pages]
    )
    focus = MetaFocus(policy, lambda topic, texts: np.array([0.7, -0.3]))
    first, second = focus.score_pages([page, page])
    assert first == PageVerdict("Databases", 0.7, True)
    assert second.accepted is False and second.topic is None
    assert focus.taxonomy is None  # everything else is the wrapped policy's


def test_meta_focus_judges_feed_entries_again_as_it_judges_pages():
    asked = []

    def meta_confidence(topic, texts):
        asked.append((topic, list(texts)))
        return np.array([0.9, -0.2])

    local = [PageVerdict("Databases", 0.4, True)] * 2 + [PageVerdict(None, 0.1, False)]
    policy = SimpleNamespace(score_entries=lambda feed, texts: local)
    entries = MetaFocus(policy, meta_confidence).score_entries(None, ["sql", "cooking", "football"])
    assert entries == [
        PageVerdict("Databases", 0.9, True),
        PageVerdict(None, 0.2, False),  # the meta-classifier rejects what the local model accepted
        PageVerdict(None, 0.1, False),  # rejected by the local model: not asked again
    ]
    assert asked == [("Databases", ["sql", "cooking"])]
    no_judge = MetaFocus(SimpleNamespace(), meta_confidence).score_entries(None, ["sql"])
    assert no_judge == [PageVerdict(None, 0.0, False)]  # tunnelled, as without the wrapper


def test_community_weight_comes_from_the_median_reporter_and_a_model_cannot_vouch_for_itself():
    weight, accuracy, documents, reporters = weighing.community_weight(
        (0, 0), {"b": (18, 20), "c": (19, 20), "owner": (20, 20)}, "owner"
    )
    assert accuracy == 0.9 and documents == 40 and reporters == 2 and weight > 0
    assert weighing.community_weight((0, 0), {}, "owner") == (0.0, None, 0, 0)


def test_a_model_this_node_measured_below_chance_gets_no_say_whatever_peers_report():
    weight, accuracy, documents, reporters = weighing.community_weight(
        (2, 20), {"b": (20, 20), "c": (20, 20), "d": (20, 20)}, "bad"
    )
    assert weight == 0.0 and accuracy == 0.1 and documents == 20 and reporters == 4


def test_a_model_measured_well_here_keeps_its_say_when_peers_seeded_elsewhere_measure_it_low():
    specialist = weighing.community_weight((26, 27), {"b": (2, 8)}, "owner")
    assert specialist[0] > 0 and specialist[1] == 26 / 27
    # with too few documents here, the peers' lower median decides
    assert weighing.community_weight((3, 3), {"b": (2, 8)}, "owner")[0] == 0.0


def test_a_label_flipped_model_cannot_be_calibrated_into_a_good_one(tmp_path):
    data = labelled(tmp_path, 0)
    other = labelled(tmp_path, 1)
    bad = flipped(training.train_local(other))
    member = weighing.received_member("bad", 1, bad, data, {"liar": (100, 100), "liar2": (100, 100)})
    assert member.scaler is None and member.weight == 0.0
    good = weighing.received_member("good", 1, training.train_local(other), data)
    assert good.scaler is not None and good.scaler.a < 0 and good.weight > 0


def test_a_model_right_on_held_out_documents_of_one_class_keeps_its_weight(tmp_path):
    # the Peers screen showed "accuracy here 0.89, weight 0": the model was trained on every positive
    # document here, so its held-out ones were all negatives, and no Platt scaler fits one class
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    positives = tuple(i for i, y in zip(own.ids, own.labels, strict=True) if y == 1)
    model = replace(training.train_local(other), training_ids=positives)
    member = weighing.received_member("peer", 1, model, own)
    assert member.evaluated == own.negatives and member.accuracy > 0.8
    assert member.scaler is not None and member.weight > 0


def test_preview_skips_navigation_lines_and_keeps_the_length():
    text = "Download the ebook\nPrev\nNext\n8.6. Shell Environment\n" + "Command interpreters " * 10
    shown = previews.preview(text, 100)
    assert shown.startswith("Command interpreters") and len(shown) == 100
    assert previews.preview("short\nlines only", 100) == "short lines only"


SITE_MENU = (
    "Modules | Directives | FAQ | Glossary | Sitemap | Report a bug\nSmall. Fast. Reliable. Choose any three."
)
PAGES = {
    "http://h.example/vacuum.html": "Routine vacuuming reclaims storage. It also updates statistics.",
    "http://h.example/backup.html": "Databases should be backed up regularly. There are three ways.",
    "http://h.example/roles.html": "Database access permissions are managed with roles.",
}


def test_a_pooled_result_previews_its_first_sentences_not_the_menu_its_site_repeats(tmp_path):
    rows = [
        {"url": url, "text": f"{SITE_MENU}\nNext: Backups Up: Guide\n{body}"} for url, body in PAGES.items()
    ]
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            for row in rows:
                repo.insert_page(StoredPage(text_document(row["url"], "", row["text"])))
        shown = previews.result_previews(repo, rows, 60)
    assert shown[0] == "Routine vacuuming reclaims storage. It also updates statisti"
    assert shown[1].startswith("Databases should be backed up regularly.")
    assert all(len(s) <= 60 and "Modules" not in s and "Small." not in s for s in shown)


def test_decision_agreement_tells_a_retrained_model_worth_shipping_from_one_that_decides_alike(tmp_path):
    data = labelled(tmp_path, 0)
    model = training.train_local(data)
    assert training.decision_agreement(model, model, data.X, 0.2) == 1.0
    assert training.decision_agreement(model, flipped(model), data.X, 0.2) < 0.5
    retrained = training.train_local(labelled(tmp_path, 1))
    assert 0.5 < training.decision_agreement(model, retrained, data.X, 0.2) <= 1.0


def test_with_two_peers_the_meta_is_unanimous_latent_class_models_and_a_flipped_one_has_no_say(
    tmp_path,
):
    own, other, third = labelled(tmp_path, 0), labelled(tmp_path, 1), labelled(tmp_path, 2)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    peers = [
        weighing.received_member(f"p{i}", 1, training.train_local(d), own)
        for i, d in ((1, other), (2, third))
    ]
    bad = weighing.received_member("bad", 1, flipped(training.train_local(other)), own)
    unlabelled = crawled_documents(tmp_path)
    members = [local, *peers, bad]
    meta = latent_meta.meta_classifier(members, unlabelled)
    assert [voter.views for voter in meta.latent] == [(0,), (0, 1, 2)]
    assert meta.weights[-1] == 0.0 and all(w > 0 for w in meta.weights[:-1])
    assert filtering.decision_accuracy(latent_meta.meta_scores(meta, own.X), own.labels, 0.0) > 0.8
    back = type(meta).from_dict(meta.to_dict())
    assert np.allclose(latent_meta.meta_scores(back, unlabelled), latent_meta.meta_scores(meta, unlabelled))
    # the unanimous rule: where the local model's own latent class model and the community's disagree,
    # the meta confidence is 0 (dismissed first); where they agree, the less sure one's
    votes = np.column_stack([v.log_odds(meta.view_log_odds(unlabelled, v)) for v in meta.latent])
    scores = latent_meta.meta_scores(meta, unlabelled)
    agree = np.sign(votes[:, 0]) == np.sign(votes[:, 1])
    assert np.all(scores[~agree] == 0.0)
    assert np.allclose(np.abs(scores[agree]), np.tanh(0.5 * np.abs(votes[agree]).min(axis=1)))


def local_and_two_peers(tmp_path):
    """A node's local member, two honest peers' members measured on its labels, and its own documents."""
    _, local, peer, another, unlabelled = labels_and_members(tmp_path)
    return local, peer, another, unlabelled


def labels_and_members(tmp_path):
    """`local_and_two_peers` with the node's labelled documents first."""
    own, other, third = labelled(tmp_path, 0), labelled(tmp_path, 1), labelled(tmp_path, 2)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    peer = weighing.received_member("p1", 1, training.train_local(other), own)
    another = weighing.received_member("p2", 1, training.train_local(third), own)
    return own, local, peer, another, crawled_documents(tmp_path)


def test_the_looser_share_is_of_documents_the_community_accepts_and_the_local_model_rejects():
    local = np.array([2.0, 1.0, -1.0, -3.0, -0.5, 0.0])
    community = np.array([1.5, -2.0, 0.5, -1.0, 4.0, 1.0])
    # accepted by the community only: documents 2, 4 and 5 (0 is no acceptance); the reverse only document 1
    assert latent_meta.looser_share(local, community) == pytest.approx(3 / 6)
    assert latent_meta.looser_share(community, local) == pytest.approx(1 / 6)
    assert (
        latent_meta.looser_share(local, local) == 0.0
        and latent_meta.looser_share(local[:0], local[:0]) == 0.0
    )
    assert latent_meta.accepts_beyond_the_loss(local, community, 0.4)
    assert not latent_meta.accepts_beyond_the_loss(local, community, 0.5)
    # documents a sibling topic claims are rejected with its confidence, never dismissed: they do not count
    claimed = np.array([False, False, True, False, True, False])
    assert latent_meta.looser_share(local, community, claimed) == pytest.approx(1 / 6)
    assert not latent_meta.accepts_beyond_the_loss(local, community, 0.4, claimed)


def test_a_rival_topics_claims_are_the_documents_its_meta_classifier_accepts(monkeypatch):
    metas = {"Top/A": "a", "Top/B": "b", "Top/C": "c", "Other/D": "d", "Top/A/Sub": "sub"}
    scores = {"a": [1.0, -1.0, -1.0], "b": [-1.0, 0.5, -1.0], "c": [-1.0, -1.0, 0.0], "d": [-1.0, -1.0, 1.0]}
    monkeypatch.setattr(filtering, "meta_scores", lambda meta, X: np.array(scores[meta]))
    X = sp.csr_matrix(np.ones((3, 2)))
    # the rivals of Top/A are Top/B and Top/C (a score of 0 is no claim); Other/D and Top/A/Sub are not
    assert filtering.rival_claims(metas, "Top/A", X).tolist() == [False, True, False]
    assert filtering.rival_claims(metas, "Top/A/Sub", X).tolist() == [False, True, False]
    assert filtering.rival_claims(metas, "Top/B", X).tolist() == [True, False, False]
    assert filtering.rival_claims(metas, "Other/D", X) is None
    assert filtering.rival_claims(metas, "Top/A", X[:0]) is None


def test_a_community_model_accepting_more_of_the_crawl_the_node_rejects_than_the_loss_has_no_vote(
    tmp_path, monkeypatch
):
    local, peer, another, unlabelled = local_and_two_peers(tmp_path)
    members = [local, peer, another]
    both = latent_meta.meta_classifier(members, unlabelled)
    assert [voter.views for voter in both.latent] == [(0,), (0, 1, 2)]
    share = latent_meta.looser_share(
        *(latent_meta.posterior_log_odds(v, members, unlabelled) for v in both.latent)
    )
    # a community that accepts no more than the node does keeps its vote at any loss
    assert latent_meta.meta_classifier(members, unlabelled, loss=share).latent == both.latent
    monkeypatch.setattr(latent_meta, "looser_share", lambda *args: 0.25)
    assert latent_meta.meta_classifier(members, unlabelled, loss=0.25).latent == both.latent
    left_out = latent_meta.meta_classifier(members, unlabelled, loss=0.2)
    assert left_out.latent == both.latent[:1] and left_out.weights[1:] == (0.0, 0.0)
    assert latent_meta.meta_classifier(members, unlabelled).latent == both.latent  # no loss, no check


def test_the_pages_rival_topics_claim_reach_the_looseness_check_of_a_build_and_of_a_held_out_fold(
    tmp_path, monkeypatch
):
    from node.heldout import refitted_latent

    local, peer, another, unlabelled = local_and_two_peers(tmp_path)
    members = [local, peer, another]
    both = latent_meta.meta_classifier(members, unlabelled)
    assert [voter.views for voter in both.latent] == [(0,), (0, 1, 2)]
    seen = []

    def looser_unless_claimed(local_view, community, loss, claimed=None):
        seen.append(claimed)
        return claimed is None

    monkeypatch.setattr(latent_meta, "accepts_beyond_the_loss", looser_unless_claimed)
    claimed = np.arange(unlabelled.shape[0]) % 3 == 0
    assert latent_meta.meta_classifier(members, unlabelled, loss=0.2).latent == both.latent[:1]
    assert latent_meta.meta_classifier(members, unlabelled, loss=0.2, claimed=claimed).latent == both.latent
    assert seen[0] is None and seen[1] is claimed
    no_labels = training.LabelledData((), unlabelled[:0], np.zeros(0))
    assert len(refitted_latent(both, 0, unlabelled, no_labels, 0.2, claimed)) == 2
    assert len(refitted_latent(both, 0, unlabelled, no_labels, 0.2)) == 1
    assert seen[2] is claimed and seen[3] is None


def test_a_model_sent_twice_is_one_view_of_the_latent_class_model(tmp_path):
    local, peer, another, unlabelled = local_and_two_peers(tmp_path)
    copy = replace(peer, origin="p1-copy")
    meta = latent_meta.meta_classifier([local, peer, copy, another], unlabelled)
    assert [voter.views for voter in meta.latent] == [(0,), (0, 1, 3)] and meta.weights[2] == 0.0
    pair = latent_meta.meta_classifier([local, peer, copy], unlabelled)
    assert [voter.views for voter in pair.latent] == [(0,), (0, 1)] and pair.weights[2] == 0.0


def test_without_peers_the_local_model_moves_its_threshold_to_where_its_view_of_the_crawl_splits(tmp_path):
    own = labelled(tmp_path, 0)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    unlabelled = crawled_documents(tmp_path)
    meta = latent_meta.meta_classifier([local], unlabelled)
    assert [voter.views for voter in meta.latent] == [(0,)]
    log_odds = local.scaler.log_odds(local.model.confidence(unlabelled))
    posterior = meta.latent[0].log_odds(log_odds.reshape(-1, 1))
    assert np.array_equal(np.sign(latent_meta.meta_scores(meta, unlabelled)), np.sign(posterior))
    assert latent_meta.meta_classifier([local]).latent == ()  # without the node's documents: Platt alone


def test_a_node_with_too_few_labels_to_measure_its_model_still_moves_its_threshold_by_its_crawl(tmp_path):
    own = labelled(tmp_path, 0)
    keep = np.flatnonzero(own.labels == 0).tolist() + np.flatnonzero(own.labels == 1)[:1].tolist()
    one_bookmark = training.LabelledData(tuple(own.ids[i] for i in keep), own.X[keep], own.labels[keep])
    local = weighing.local_member("me", 1, training.train_local(one_bookmark), one_bookmark)
    assert local.balanced_accuracy is None and local.scaler is not None
    meta = latent_meta.meta_classifier([local], crawled_documents(tmp_path))
    assert [voter.views for voter in meta.latent] == [(0,)]


def crawl_split_below_the_negatives(model, data: training.LabelledData) -> sp.csr_matrix:
    """A crawl of the labelled negatives' kind of page, the labelled positives and a group of pages made of
    the terms the model holds most against the topic: its two classes are that group and everything else."""
    most_negative = model.indices[np.argsort(model.weights)[:5]]
    rows = np.repeat(np.arange(40), most_negative.size)
    values = 3.0 + 0.05 * rows
    far_below = sp.csr_matrix((values, (rows, np.tile(most_negative, 40))), shape=(40, data.X.shape[1]))
    negatives, positives = data.X[data.labels == 0], data.X[data.labels == 1]
    return sp.vstack([negatives] * 4 + [positives, far_below]).tocsr()


def test_a_crawl_split_that_accepts_most_of_the_labelled_negatives_is_not_taken_for_the_topic(tmp_path):
    # a crawl of the node's negative kind of page, a few on-topic pages and a group scored far below
    # both: its two classes are that group and everything else, not the topic and the rest
    own = labelled(tmp_path, 0)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    negatives, positives = own.X[own.labels == 0], own.X[own.labels == 1]
    crawl = crawl_split_below_the_negatives(local.model, own)
    unchecked = latent_meta.meta_classifier([local], crawl)
    assert [voter.views for voter in unchecked.latent] == [(0,)]
    accepted = latent_meta.meta_scores(unchecked, negatives) > 0
    assert accepted.mean() > 0.5 and latent_meta.splits_off_the_topic(unchecked.latent[0], [local], own)
    checked = latent_meta.meta_classifier([local], crawl, own)
    assert checked.latent == ()
    assert np.all(latent_meta.meta_scores(checked, negatives) < 0)
    assert np.all(latent_meta.meta_scores(checked, positives) > 0)
    # a split that is the topic's passes the check
    usual = latent_meta.meta_classifier([local], crawled_documents(tmp_path), own)
    assert [voter.views for voter in usual.latent] == [(0,)]


def test_a_latent_class_model_whose_classes_overlap_on_the_local_view_does_not_decide(tmp_path, monkeypatch):
    from metamodels.latent_class import LatentClass

    close = LatentClass((0, 1), 0.5, ((0.0, 0.0), (0.4, 3.0)), ((1.0, 1.0), (1.0, 1.0)))
    apart = LatentClass((0, 1), 0.5, ((0.0, 0.0), (0.6, 0.1)), ((1.0, 1.0), (1.0, 1.0)))
    # the local view's counts
    assert latent_meta.overlapping(close, 0) and not latent_meta.overlapping(close, 1)
    assert not latent_meta.overlapping(apart, 0)
    own = labelled(tmp_path, 0)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    crawl = crawled_documents(tmp_path)
    (voter,) = latent_meta.meta_classifier([local], crawl, own).latent
    separation = float(voter.separations()[0])
    monkeypatch.setattr(latent_meta, "MIN_SEPARATION", separation + 0.01)
    assert not latent_meta.stands_for_the_topic(voter, [local], own)
    assert latent_meta.meta_classifier([local], crawl, own).latent == ()  # its labels' threshold decides
    monkeypatch.setattr(latent_meta, "MIN_SEPARATION", separation - 0.01)
    assert latent_meta.meta_classifier([local], crawl, own).latent == (voter,)


def test_where_the_local_view_has_no_split_of_its_own_its_labels_threshold_votes_beside_the_community(
    tmp_path, monkeypatch
):
    own, local, peer, another, unlabelled = labels_and_members(tmp_path)
    dropped_single_views = lambda voter, members, labelled: len(voter.views) == 1  # noqa: E731
    monkeypatch.setattr(latent_meta, "splits_off_the_topic", dropped_single_views)
    meta = latent_meta.meta_classifier([local, peer, another], unlabelled, own)
    assert [voter.views for voter in meta.latent] == [(0,), (0, 1, 2)]
    assert meta.latent[0].of_labels and not meta.latent[1].of_labels
    # a peer's model can make the node abstain, never decide otherwise: every decision has the sign the
    # local model's labels give it
    platt = local.scaler.log_odds(local.model.confidence(unlabelled))
    scores = latent_meta.meta_scores(meta, unlabelled)
    decided = scores != 0
    assert decided.any() and np.all(np.sign(scores[decided]) == np.sign(platt[decided]))
    assert (
        latent_meta.combination(meta.to_dict(), [{"origin": "local"}] * 3)["voters"][0]["on_topic_share"]
        is None
    )


def test_beside_its_labels_threshold_a_community_model_is_not_judged_looser_than_the_node(
    tmp_path, monkeypatch
):
    # the labels' threshold accepts a fraction of a crawl's on-topic pages, so it cannot tell a community
    # model that finds the crawl's share from one looser than the node: the community keeps its vote
    own, local, peer, another, unlabelled = labels_and_members(tmp_path)
    members = [local, peer, another]
    monkeypatch.setattr(latent_meta, "looser_share", lambda *args: 0.9)
    fitted_view = latent_meta.meta_classifier(members, unlabelled, own, loss=0.2)
    assert [voter.views for voter in fitted_view.latent] == [(0,)]
    dropped_single_views = lambda voter, members, labelled: len(voter.views) == 1  # noqa: E731
    monkeypatch.setattr(latent_meta, "splits_off_the_topic", dropped_single_views)
    labels_threshold = latent_meta.meta_classifier(members, unlabelled, own, loss=0.2)
    assert [voter.views for voter in labels_threshold.latent] == [(0,), (0, 1, 2)]
    assert labels_threshold.latent[0].of_labels
    assert not latent_meta.measures_looseness(labels_threshold.latent[0])
    assert not latent_meta.measures_looseness(None)
    assert latent_meta.measures_looseness(fitted_view.latent[0])


def test_a_held_out_fold_fits_its_latent_class_model_again_from_its_retrained_local_model(
    tmp_path, monkeypatch
):
    from metamodels.latent_class import fit_latent_class, labels_view
    from node.heldout import refitted_latent

    own = labelled(tmp_path, 0)
    crawl = crawled_documents(tmp_path)
    meta = latent_meta.meta_classifier(
        [weighing.local_member("me", 1, training.train_local(own), own)], crawl, own
    )
    train = np.arange(own.labels.size)[::2]
    part = training.LabelledData(tuple(own.ids[i] for i in train), own.X[train], own.labels[train])
    fold = replace(meta, models=(training.train_local(part),))
    (voter,) = refitted_latent(fold, 0, crawl, part)
    assert voter != meta.latent[0]
    assert voter == fit_latent_class(
        fold.view_log_odds(crawl, voter), (0,), 0, training.MIN_AGREEMENT_DOCUMENTS
    )
    # a fold whose split of the crawl takes in most of its labelled negatives votes with its labels' threshold
    split_off = crawl_split_below_the_negatives(fold.models[0], part)
    assert refitted_latent(fold, 0, split_off, part) == (labels_view(0),)
    assert refitted_latent(replace(fold, latent=(labels_view(0),)), 0, crawl, part) == (labels_view(0),)
    # and so does a fold whose two classes overlap on its local model's view
    monkeypatch.setattr(latent_meta, "MIN_SEPARATION", float(voter.separations()[0]) + 0.01)
    assert refitted_latent(fold, 0, crawl, part) == (labels_view(0),)


def test_a_held_out_fold_leaves_out_a_community_model_looser_than_the_loss_its_meta_was_built_for(
    tmp_path, monkeypatch
):
    from node.heldout import refitted_latent

    local, peer, another, crawl = local_and_two_peers(tmp_path)
    (tmp_path / "again").mkdir()
    own = labelled(tmp_path / "again", 0)  # the local member's labels
    meta = latent_meta.meta_classifier([local, peer, another], crawl, own, loss=0.2)
    assert [voter.views for voter in meta.latent] == [(0,), (0, 1, 2)]
    train = np.arange(own.labels.size)[::2]
    part = training.LabelledData(tuple(own.ids[i] for i in train), own.X[train], own.labels[train])
    fold = replace(meta, models=(training.train_local(part), *meta.models[1:]))
    assert [v.views for v in refitted_latent(fold, 0, crawl, part, 0.2)] == [(0,), (0, 1, 2)]
    monkeypatch.setattr(latent_meta, "looser_share", lambda *args: 0.25)
    assert [v.views for v in refitted_latent(fold, 0, crawl, part, 0.2)] == [(0,)]
    assert [v.views for v in refitted_latent(fold, 0, crawl, part, 0.3)] == [(0,), (0, 1, 2)]
    assert [v.views for v in refitted_latent(fold, 0, crawl, part)] == [(0,), (0, 1, 2)]


def test_peers_are_measured_at_the_crawls_split_where_the_local_threshold_rejects_every_page(tmp_path):
    # a node's Platt scaler fitted on two bookmarks among many negatives puts its threshold beyond every
    # crawled page: its decisions are one-sided, and agreement with them would put every peer at chance
    own, local, peer, another, unlabelled = labels_and_members(tmp_path)
    shut = replace(local, scaler=replace(local.scaler, b=local.scaler.b + 50.0))
    members = [shut, peer, another]
    assert not np.any(shut.scaler.confidence(shut.model.confidence(unlabelled)) > 0)
    assert weighing.anchored_accuracies(members, unlabelled) == {0: shut.balanced_accuracy, 1: 0.5, 2: 0.5}
    measured = weighing.anchored_accuracies(members, unlabelled, own)
    assert measured[0] == shut.balanced_accuracy and measured[1] > 0.6 and measured[2] > 0.6
    assert [v.views for v in latent_meta.meta_classifier(members, unlabelled).latent] == [(0,)]
    checked = latent_meta.meta_classifier(members, unlabelled, own)
    assert [v.views for v in checked.latent] == [(0,), (0, 1, 2)]


def test_one_sided_decisions_put_fewer_than_the_minimum_share_in_a_class():
    assert weighing.one_sided(np.array([-1] * 99 + [1]))
    assert weighing.one_sided(np.array([1] * 100)) and weighing.one_sided(np.array([], dtype=int))
    assert not weighing.one_sided(np.array([-1] * 95 + [1] * 5))


def test_agreement_weights_give_a_flipped_model_no_say(tmp_path):
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    peer = weighing.received_member("p1", 1, training.train_local(other), own)
    bad = weighing.received_member("bad", 1, flipped(training.train_local(other)), own)
    unlabelled = crawled_documents(tmp_path)
    weights = weighing.agreement_weights([local, peer, bad], unlabelled)
    assert weights[-1] == 0.0 and all(w > 0 for w in weights[:-1])
    assert local.balanced_accuracy is not None and local.balanced_accuracy > 0.5


def test_without_own_documents_or_a_local_model_the_measured_weights_stay(tmp_path):
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    peer = weighing.received_member("p1", 1, training.train_local(other), own)
    for members, documents in (([local, peer], None), ([peer], crawled_documents(tmp_path))):
        meta = latent_meta.meta_classifier(members, documents)
        assert meta.latent == () and meta.aggregation is None
        assert meta.weights == tuple(m.weight for m in members)


def test_peers_get_no_view_beside_a_local_model_its_labels_cannot_measure(tmp_path):
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    peer = weighing.received_member("p1", 1, training.train_local(other), own)
    unmeasured = replace(local, balanced_accuracy=None)
    meta = latent_meta.meta_classifier([unmeasured, peer], crawled_documents(tmp_path))
    assert [voter.views for voter in meta.latent] == [(0,)] and meta.weights[1] == 0.0


def test_a_received_model_sent_twice_has_no_more_say_than_once(tmp_path):
    local, peer, another, unlabelled = local_and_two_peers(tmp_path)
    once = weighing.agreement_weights([local, peer, another], unlabelled)
    twice = weighing.agreement_weights([local, peer, replace(peer, origin="p1-copy"), another], unlabelled)
    assert once[0] == twice[0] and once[1] > 0
    assert twice[1] == twice[2] and twice[1] + twice[2] < 2 * once[1]
    alone = weighing.agreement_weights([local, peer], unlabelled)
    doubled = weighing.agreement_weights([local, peer, replace(peer, origin="p1-copy")], unlabelled)
    assert doubled[0] == alone[0] and doubled[1] + doubled[2] == pytest.approx(alone[1])


def test_a_community_weaker_than_the_local_model_on_its_documents_gets_no_say(tmp_path):
    own, other = labelled(tmp_path, 0), labelled(tmp_path, 1)
    local = weighing.local_member("me", 1, training.train_local(own), own)
    model = training.train_local(other)
    # a weaker peer: the signs of about two in five of its feature weights turned, right on 3 of 4 labels
    turned = np.where(np.random.default_rng(2).random(model.weights.size) < 0.42, -1.0, 1.0)
    weak = weighing.received_member("weak", 1, replace(model, weights=model.weights * turned), own)
    good = weighing.received_member("good", 1, model, own)
    assert weak.scaler is not None and 0.5 < weak.accuracy < 0.9
    unlabelled = crawled_documents(tmp_path)
    alone = weighing.agreement_weights([local, weak], unlabelled)
    assert alone[0] > 0 and alone[1] == 0.0
    # in the latent class meta-classifier a peer can make the node abstain, never decide otherwise
    meta = latent_meta.meta_classifier([local, weak], unlabelled)
    alone_scores = latent_meta.meta_scores(latent_meta.meta_classifier([local], unlabelled), unlabelled)
    scores = latent_meta.meta_scores(meta, unlabelled)
    decided = scores != 0
    assert np.array_equal(np.sign(scores[decided]), np.sign(alone_scores[decided]))
    assert np.all(np.abs(scores) <= np.abs(alone_scores) + 1e-12)
    # beside a good peer the community's voice outweighs the local model, and the weak peer keeps its part
    together = weighing.agreement_weights([local, good, weak], unlabelled)
    assert together[1] + together[2] >= together[0] and together[2] > 0


def crawled_documents(tmp_path):
    """Features of a node's own crawled documents (unlabelled)."""
    path = tmp_path / "crawl.sqlite"
    make_repository(path, 0, crawled=60)
    with Repository(path) as repo:
        return training.own_documents(repo, Featurizer(FeatureConfig()))


def test_subtopic_terms_are_shown_as_the_words_the_documents_use():
    featurizer = Featurizer(FeatureConfig())
    words = refinement.surface_forms(
        ["Tutorials on replication", "A replication tutorial", "tutorial: replicated logs"], featurizer
    )
    stem = featurizer.terms("tutorial")[0]
    assert stem != "tutorial"  # the stemmer shortens it, so the label needs the surface form
    assert words[stem] == "tutorial"
    assert words[featurizer.terms("replication")[0]] == "replication"


def test_a_meta_build_asks_unmeasured_peers_after_measured_ones_and_never_vetoed_ones():
    accuracies = {"good": 0.9, "better": 0.95, "chance": 0.5, "flipped": 0.0}
    community = ["unmeasured", "chance", "good", "flipped", "better"]
    assert weighing.meta_candidates(community, accuracies) == ["better", "good", "unmeasured"]


def test_rival_topics_are_the_siblings_of_the_topic_and_of_every_topic_above_it():
    topics = ["Databases", "Databases/SQL", "Databases/NoSQL", "Databases/SQL/Joins", "Mathematics"]
    topics.append("Other/SQL")
    assert filtering.rival_topics("Databases/SQL", topics) == ["Databases/NoSQL", "Mathematics"]
    assert filtering.rival_topics("Databases", topics) == ["Mathematics"]
    # an only child competes with what its parent competes with, never with its parent or its own subtopics
    assert filtering.rival_topics("Databases/SQL/Joins", topics) == ["Databases/NoSQL", "Mathematics"]
    assert filtering.rival_topics("Other/SQL", topics) == ["Databases", "Mathematics"]
    assert filtering.rivalled_by("Mathematics", topics) == [
        "Databases",
        "Databases/NoSQL",
        "Databases/SQL",
        "Databases/SQL/Joins",
        "Other/SQL",
    ]
    assert filtering.rivalled_by("Databases/NoSQL", topics) == ["Databases/SQL", "Databases/SQL/Joins"]


def test_subtopic_labels_come_from_the_documents_own_lines_not_their_sites_menu():
    menu = "Small. Fast. Reliable. Choose any three.\nDownload | License | Purchase"
    vacuum = [f"{menu}\nVacuum reclaims storage from dead rows, vacuum {i} and autovacuum." for i in range(6)]
    plots = [f"Gnuplot draws plots of functions; plot {i} with splot and histograms." for i in range(6)]
    texts = tuple(vacuum + plots)
    titles = tuple(f"page {i}" for i in range(len(texts)))
    docs = filtering.TopicDocuments(np.arange(len(texts)), titles, texts)
    featurizer = Featurizer(FeatureConfig())
    X = sp.csr_matrix(featurizer.transform(texts))
    model = refinement.local_centroids(X, 2, featurizer)
    proposals = refinement.cluster_proposals(docs, X, [model], 2, 0.0, featurizer)
    terms = {term for proposal in proposals for term in proposal["top_terms"]}
    assert {"vacuum", "gnuplot"} <= terms
    assert not terms & {"small", "fast", "reliable", "choose", "download", "license", "purchase"}
    for (
        proposal
    ) in proposals:  # the name an unnamed subtopic gets: words a topic key and a shell take as they are
        assert proposal["label"] == "-".join(proposal["top_terms"][:3])


def test_a_subtopic_named_after_its_terms_gets_a_key_segment_without_commas():
    """`refine --accept ID` without --name made "Databases/vacuum, rows, autovacuum" from the label."""
    name = subtopic_name(["vacuum", "rows", "autovacuum", "storage"], "cluster 1")
    assert name == "vacuum-rows-autovacuum"
    assert escape_name(name) == name and check_topic(f"Databases/{name}", "topic") == f"Databases/{name}"
    assert subtopic_name(["C++", "std::vector"], "cluster 1") == "C-std-vector"  # words only
    assert subtopic_name([], "cluster 2") == "cluster 2"


def test_an_accepted_subtopic_trains_on_its_best_pages_and_takes_the_parents_learned_ones(tmp_path):
    """Its pages most confident first, past those already training documents (the first row of a page
    counts, so a second would label nothing), up to `SUBTOPIC_EXAMPLES`; the parent's archetype of a page
    filed in the subtopic moves with it (left behind, it trained the subtopic against its own page), the
    parent's bookmark stays (a re-import restores it)."""
    from crawler.taxonomy import FETCHED, POSITIVE, TrainingDocument, add_training_documents, store_subtopic

    path = tmp_path / "n.sqlite"
    make_repository(path, 0)
    key = "Databases/Transactions"
    with Repository(path) as repo:
        with repo.transaction() as db:
            ids = [
                add_document(db, f"http://t.test/{i}", f"t{i}", f"commit rollback {i}", "Databases")
                for i in range(30)
            ]
        bookmark = repo.db.execute("SELECT url FROM training_documents WHERE topic = 'Databases'").fetchone()[
            0
        ]
        with repo.transaction() as db:
            ids.insert(0, add_document(db, bookmark, "b", "bookmarked page", "Databases"))
        learned = TrainingDocument(
            "Databases", POSITIVE, url="http://t.test/1", text="t1", status=FETCHED, source="archetype"
        )
        add_training_documents(repo, [learned])
        examples = refinement.subtopic_examples(repo, key, ids)
        store_subtopic(repo, key, "Transactions", ids, examples)
        rows = repo.db.execute("SELECT topic, url, source FROM training_documents ORDER BY id").fetchall()
        filed = repo.db.execute("SELECT count(*) FROM documents WHERE topic = ?", [key]).fetchone()[0]
        positives = refinement.positive_examples(repo, key)
    wanted = [f"http://t.test/{i}" for i in (0, *range(2, refinement.SUBTOPIC_EXAMPLES + 1))]
    assert [d.url for d in examples] == wanted
    assert {(t, u) for t, u, s in rows if s == "refine"} == {(key, u) for u in wanted}
    assert (key, "http://t.test/1", "archetype") in rows
    assert ("Databases", bookmark, "import") in rows
    assert filed == len(ids)
    assert positives == refinement.SUBTOPIC_EXAMPLES + 1  # the archetype


def test_a_topics_verdict_counts_are_its_documents_verdicts_now_subtopics_included(tmp_path):
    path = tmp_path / "n.sqlite"
    make_repository(path, 0)
    with Repository(path) as repo:
        docs = filtering.topic_documents(repo, "Databases")
        decisions = np.array([(1, -1, 0)[i % 3] for i in range(docs.doc_ids.size)], dtype=np.int8)
        written = filtering.write_verdicts(repo, docs.doc_ids, decisions)
        assert {**written, "unjudged": 0} == filtering.verdict_counts(repo, "Databases")
        with repo.transaction() as db:  # filed since: counted as not judged yet, in a subtopic too
            add_document(db, "http://127.0.0.1/new/1", "new", "words", "Databases/Indexes")
            add_document(db, "http://127.0.0.1/new/2", "new", "words", "Mathematics")
        counts = filtering.verdict_counts(repo, "Databases")
    assert counts["unjudged"] == 1 and counts["kept"] == int(np.sum(decisions == 1)) > 0
    assert counts["rejected"] == int(np.sum(decisions == -1)) > 0
    assert counts["abstained"] == int(np.sum(decisions == 0)) > 0
