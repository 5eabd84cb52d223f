"""Relevance feedback: stored marks, the least-squares weight fit (eq. 4.8), training documents."""

from __future__ import annotations

import numpy as np
import pytest

from crawler.feedback import (
    FeedbackError,
    FeedbackRecord,
    feedback_of,
    fit_weights,
    latest_marks,
    personal_weights,
    record_feedback,
)
from crawler.ranking import TEXT_ONLY, RankingWeights
from crawler.repository import Repository, StoredPage
from crawler.search import ranked_search, text_document
from crawler.taxonomy import NEGATIVE, POSITIVE


def test_plain_least_squares_recovers_the_exact_weights():
    X = np.array([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0], [1.0, 1.0, 0, 0]])
    true = np.array([0.5, -0.25, 0.0, 1.0])
    fitted = fit_weights(X, X @ true, strength=0.0, intercept=False)
    assert np.allclose(fitted.as_array(), true)


def test_rank_deficient_fit_takes_the_minimum_norm_solution():
    fitted = fit_weights(np.array([[1.0, 1.0, 0, 0]]), np.array([1.0]), strength=0.0, intercept=False)
    assert np.allclose(fitted.as_array(), [0.5, 0.5, 0.0, 0.0])


def test_prior_pulls_unmarked_signals_toward_the_default_share():
    # one mark on the text signal only: the ridge normal equations give w = (X'y + s w0) / (X'X + s)
    fitted = fit_weights(np.array([[1.0, 0, 0, 0]]), np.array([1.0]), strength=1.0, intercept=False)
    assert np.allclose(fitted.as_array(), [(1 + 0.25) / 2, 0.25, 0.25, 0.25])


def test_fitted_weights_are_clipped_to_the_unit_interval():
    fitted = fit_weights(np.array([[0.1, 0, 0, 0]]), np.array([1.0]), strength=0.0, intercept=False)
    assert fitted.text == 1.0


def test_intercept_absorbs_the_level_so_weights_follow_the_contrast():
    # every mark scores high on text; only confidence separates relevant from irrelevant
    X = np.array([[1.0, 0.9, 0, 0], [0.9, 0.8, 0, 0], [1.0, 0.1, 0, 0], [0.9, 0.2, 0, 0]])
    y = np.array([1.0, 1.0, 0.0, 0.0])
    with_intercept = fit_weights(X, y, strength=0.1)
    assert with_intercept.confidence > with_intercept.text
    assert with_intercept.confidence > 0.5


def test_explicit_mark_outranks_an_implicit_one_for_the_same_result():
    opened = FeedbackRecord("u", 1, "http://a", "opened", "q", None, None, 2.0)
    marked = FeedbackRecord("u", 1, "http://a", "irrelevant", "q", None, None, 1.0)
    assert [r.kind for r in latest_marks([marked, opened])] == ["irrelevant"]


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        with repo.transaction():
            # wordy: the best BM25 match but barely on topic; short: weaker text match, confidently on topic
            for url, text, confidence in (
                ("http://a/wordy", "vacuum vacuum vacuum tuning notes", 0.1),
                ("http://b/short", "vacuum reclaims storage in postgresql tables and indexes", 0.9),
                ("http://c/third", "a vacuum cleaner review with many unrelated words in it", 0.05),
            ):
                doc = text_document(url, url, text, near_duplicates=False, topic="db", confidence=confidence)
                repo.insert_page(StoredPage(doc))
        yield repo


def test_feedback_refits_weights_so_marked_results_move(repo):
    default_order = [h.url for h in ranked_search(repo, "vacuum", weights=TEXT_ONLY).hits]
    assert default_order[0] == "http://a/wordy"
    ids = {h.url: h.doc_id for h in ranked_search(repo, "vacuum").hits}
    record_feedback(repo, ids["http://b/short"], "relevant", query="vacuum")
    record_feedback(repo, ids["http://a/wordy"], "irrelevant", query="vacuum")
    weights = personal_weights(repo)
    assert weights is not None and weights.confidence > weights.text
    personal = [h.url for h in ranked_search(repo, "vacuum", weights=weights).hits]
    assert personal[0] == "http://b/short"
    assert personal.index("http://a/wordy") > personal.index("http://b/short")


def test_no_usable_feedback_means_default_weights(repo):
    assert personal_weights(repo) is None
    doc_id = ranked_search(repo, "vacuum").hits[0].doc_id
    record_feedback(repo, doc_id, "opened")  # no query: kept for profiles, not for the fit
    assert personal_weights(repo) is None
    assert [r.kind for r in feedback_of(repo)] == ["opened"]


def test_explicit_feedback_adds_training_documents_to_the_topic(repo):
    doc_id = ranked_search(repo, "postgresql").hits[0].doc_id
    record_feedback(repo, doc_id, "relevant", query="postgresql")
    record_feedback(repo, doc_id, "opened", query="postgresql")
    rows = repo.db.execute("SELECT topic, polarity, url, source FROM training_documents").fetchall()
    assert rows == [("db", POSITIVE, "http://b/short", "feedback")]  # the opened mark adds nothing


def test_a_later_mark_on_a_page_replaces_the_earlier_training_document(repo):
    doc_id = ranked_search(repo, "postgresql").hits[0].doc_id
    for _ in range(5):
        record_feedback(repo, doc_id, "relevant", query="postgresql")
    record_feedback(repo, doc_id, "irrelevant", query="postgresql")  # the user changed their mind
    rows = repo.db.execute("SELECT topic, polarity, url, source FROM training_documents").fetchall()
    assert rows == [("db", NEGATIVE, "http://b/short", "feedback")]
    assert len(feedback_of(repo)) == 6  # every mark is kept for the ranking's fit


def test_bad_marks_are_refused_with_the_accepted_forms(repo):
    with pytest.raises(FeedbackError, match="relevant, irrelevant, opened"):
        record_feedback(repo, 1, "liked")
    with pytest.raises(FeedbackError, match="no document 999"):
        record_feedback(repo, 999, "relevant")
    assert RankingWeights() == RankingWeights.from_dict({})
