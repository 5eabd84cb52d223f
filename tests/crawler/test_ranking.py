"""Ranking signals, their combination, virtual links and link scores, filters, collapsing and origins."""

from __future__ import annotations

import numpy as np
import pytest

from crawler.linkanalysis import LinkGraph
from crawler.ranking import (
    TEXT_AND_CONFIDENCE,
    TEXT_ONLY,
    RankingError,
    RankingWeights,
    combine,
    normalise_per_query,
    score_graph,
    signal_matrix,
    update_link_scores,
    virtual_links,
)
from crawler.repository import LinkRecord, Repository, StoredPage
from crawler.search import SearchError, ranked_search, text_document

BODY = "postgresql vacuum reclaims storage from dead tuples and keeps statistics fresh for the planner"


def add(repo: Repository, url: str, text: str = BODY, title: str = "Page", links=(), **fields) -> int:
    """Stores a page; pages share their text, so SimHash is off unless the test turns it on."""
    fields.setdefault("near_duplicates", False)
    with repo.transaction():
        page = StoredPage(text_document(url, title, text, **fields), tuple(LinkRecord(u, "") for u in links))
        return repo.insert_page(page)


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        yield repo


def urls(results) -> list[str]:
    return [h.url for h in results.hits]


def test_signals_are_scaled_by_their_maximum_with_negatives_as_zero():
    assert normalise_per_query(np.array([2.0, -1.0, 4.0])).tolist() == [0.5, 0.0, 1.0]
    assert normalise_per_query(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]


def test_combination_is_the_weighted_sum_of_normalised_signals():
    signals = signal_matrix(
        {"text": [10, 5], "confidence": [0.5, 1.0], "authority": [None, 2], "pagerank": [1, 1]}
    )
    assert signals.tolist() == [[1.0, 0.5, 0.0, 1.0], [0.5, 1.0, 1.0, 1.0]]
    scores = combine(signals, RankingWeights(text=2.0, confidence=1.0, authority=0.5, pagerank=0.0))
    assert scores.tolist() == [2.5, 2.5]


def test_weights_parse_from_the_command_line_form():
    assert RankingWeights.parse("text=2, authority=0.5") == RankingWeights(2.0, 1.0, 0.5, 1.0)
    with pytest.raises(RankingError, match="SIGNAL=NUMBER"):
        RankingWeights.parse("text")
    with pytest.raises(RankingError, match="unknown ranking signal"):
        RankingWeights.parse("freshness=1")


def test_virtual_links_join_relevant_nodes_further_apart_than_the_critical_path():
    chain = [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert sorted(virtual_links(5, chain, [0, 4], critical_path=3)) == [(0, 4), (4, 0)]
    assert virtual_links(5, chain, [0, 3], critical_path=3) == [(3, 0)]


def test_virtual_links_raise_the_pagerank_of_a_remote_relevant_page():
    hosts = {i: f"h{i}" for i in range(5)}
    graph = LinkGraph.build(hosts, [(0, 1), (1, 0), (1, 2), (2, 3), (3, 4)])
    confidence = np.ones(5)
    plain = score_graph(graph, confidence)
    extended = score_graph(graph, confidence, relevant=[0, 4], critical_path=2)
    assert extended.virtual_links == 2
    assert plain.virtual_links == 0
    assert extended.pagerank[0] > plain.pagerank[0]


def test_confidence_signal_lifts_the_more_confident_of_equal_text_matches(repo):
    add(repo, "http://a/low", topic="db", confidence=0.2)
    add(repo, "http://b/high", topic="db", confidence=0.9)
    assert urls(ranked_search(repo, "vacuum", weights=TEXT_AND_CONFIDENCE))[0] == "http://b/high"
    assert urls(ranked_search(repo, "vacuum", weights=RankingWeights(0, -1, 0, 0)))[0] == "http://a/low"


def test_authority_signal_lifts_the_page_other_hosts_link_to(repo):
    add(repo, "http://a/plain", text=BODY + " vacuum", confidence=0.5)
    add(repo, "http://b/cited", confidence=0.5)
    for i in range(3):
        add(repo, f"http://h{i}/hub", text="links only", links=["http://b/cited"], confidence=0.5)
    update_link_scores(repo)
    assert urls(ranked_search(repo, "vacuum", weights=TEXT_ONLY))[0] == "http://a/plain"
    authority = RankingWeights(text=1.0, confidence=0.0, authority=1.0, pagerank=0.0)
    results = ranked_search(repo, "vacuum", weights=authority)
    assert urls(results)[0] == "http://b/cited"
    assert results.hits[0].signals["authority"] == 1.0


def test_topic_filter_exact_or_with_descendants(repo):
    add(repo, "http://a/1", topic="Science")
    add(repo, "http://a/2", topic="Science/Math")
    add(repo, "http://a/3", topic="Sciences")
    add(repo, "http://a/4", topic="Science/Math", accepted=False)
    assert set(urls(ranked_search(repo, "vacuum", topic="Science"))) == {"http://a/1", "http://a/2"}
    exact = ranked_search(repo, "vacuum", topic="Science", include_descendants=False)
    assert urls(exact) == ["http://a/1"]


def test_verdict_filter_defaults_to_accepted_or_unjudged(repo):
    add(repo, "http://a/acc", verdict="accepted")
    add(repo, "http://a/none")
    add(repo, "http://a/abs", verdict="abstained")
    assert set(urls(ranked_search(repo, "vacuum"))) == {"http://a/acc", "http://a/none"}
    assert urls(ranked_search(repo, "vacuum", verdict="abstained")) == ["http://a/abs"]
    assert len(ranked_search(repo, "vacuum", verdict="any").hits) == 3
    with pytest.raises(SearchError, match="verdict must be one of"):
        ranked_search(repo, "vacuum", verdict="maybe")


def test_origin_filter_separates_local_and_pooled_results(repo):
    add(repo, "http://a/mine")
    add(repo, "http://b/theirs", origin="peerB")
    assert urls(ranked_search(repo, "vacuum", origin="local")) == ["http://a/mine"]
    pooled = ranked_search(repo, "vacuum", origin="pooled")
    assert urls(pooled) == ["http://b/theirs"] and pooled.hits[0].origin == "peerB"


def test_near_duplicates_collapse_into_the_best_with_origins_merged(repo):
    long_text = " ".join(f"word{i}" for i in range(60)) + " vacuum"
    first = add(repo, "http://a/page", text=long_text + " vacuum vacuum", simhash=0b1011 << 40)
    second = add(repo, "http://b/copy", text=long_text + " extra", origin="peerB", simhash=0b1110 << 40)
    add(repo, "http://c/other", text=BODY)
    results = ranked_search(repo, "vacuum", weights=TEXT_ONLY)
    assert results.total == 2
    best = results.hits[0]
    assert (best.doc_id, best.duplicates) == (first, (second,))
    assert best.origins == ("local", "peerB")
    assert len(ranked_search(repo, "vacuum", collapse=False).hits) == 3


def test_one_page_from_several_peers_shows_once_by_canonical_url(repo):
    first = add(repo, "http://a/x?session=1", canonical="http://a/x", origin="peerA")
    repo.db.execute("UPDATE documents SET origins = '[\"peerC\"]' WHERE id = ?", [first])
    add(repo, "http://a/x?session=2", canonical="http://a/x", origin="peerB")
    results = ranked_search(repo, "vacuum")
    assert len(results.hits) == 1
    assert set(results.hits[0].origins) == {"peerA", "peerB", "peerC"}


def test_previews_highlight_query_terms(repo):
    add(repo, "http://a/1", text="Unrelated opening words here. Routine vacuuming keeps tables small.")
    hit = ranked_search(repo, "vacuum tables").hits[0]
    assert "[[vacuuming]]" in hit.preview and "[[tables]]" in hit.preview
    assert hit.to_api()["preview"] == hit.preview


def test_paging_returns_disjoint_pages_and_a_total(repo):
    for i in range(7):
        add(repo, f"http://a/{i}", text=BODY + " vacuum" * i)
    first = ranked_search(repo, "vacuum", limit=4)
    second = ranked_search(repo, "vacuum", limit=4, offset=4)
    assert first.total == second.total == 7
    assert len(first.hits) == 4 and len(second.hits) == 3
    assert not set(urls(first)) & set(urls(second))


def test_topic_context_counts_only_confidence_within_the_topic(repo):
    add(repo, "http://a/math", topic="Math", confidence=0.5)
    add(repo, "http://b/movies", topic="Movies", confidence=0.9)
    assert urls(ranked_search(repo, "vacuum", weights=TEXT_AND_CONFIDENCE))[0] == "http://b/movies"
    in_math = ranked_search(repo, "vacuum", weights=TEXT_AND_CONFIDENCE, context="Math")
    assert urls(in_math)[0] == "http://a/math"
    assert in_math.hits[1].signals["confidence"] == 0.0
