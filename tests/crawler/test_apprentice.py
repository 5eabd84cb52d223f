import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from crawler.apprentice import PROTECTED_PRIORITY, Apprentice, ApprenticeSettings, ensure_schema
from crawler.apprentice_focus import ApprenticeFocus, rescore_entries
from crawler.errors import ApprenticeError
from crawler.frontier import Frontier, FrontierEntry
from crawler.link_features import link_features
from crawler.link_learners import LinkNaiveBayes
from crawler.parse import parse_html
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import DocumentRecord, LinkRecord, Repository, StoredPage
from node.cli import main as cli
from simnet.web import serve_web_in_subprocess

# The worked example of the research notes (seed 002, 1.4): leaves 'Links:' | 'NHL' | 'hockey' | <br> |
# 'Recipes' | 'more text'; the first anchor spans leaves 1-2, the second leaf 4.
EXAMPLE = (
    b"<html><body><p>Links: <a href='/v1'>NHL <b>hockey</b></a><br><a href='/v2'>Recipes</a> more text</p>"
    b"</body></html>"
)


def example_links():
    page = parse_html(EXAMPLE, "http://h.test/u")
    return {link.url.rsplit("/", 1)[1]: link for link in page.links}


def features_of(link, radius=5, topic="Sports/Hockey", confidence=0.73, same_host=True):
    featurizer = Apprentice().featurizer
    return link_features(featurizer, link.context, link.dom_path, topic, confidence, same_host, radius)


def test_offset_features_of_the_worked_example_count_empty_leaves_and_stem_terms():
    links = example_links()
    first = features_of(links["v1"])
    assert [f for f in first if f[0].isdigit() or f[0] == "-"] == [
        "-1:link",
        "0:nhl",
        "0:hockey",
        "2:recip",  # the <br> leaf sits at +1 and gives no term
        "3:text",  # 'more' is a stopword
    ]
    second = features_of(links["v2"])
    assert [f for f in second if f[0].isdigit() or f[0] == "-"] == [
        "-4:link",
        "-3:nhl",
        "-2:hockey",
        "0:recip",
        "1:text",
    ]


def test_context_terms_are_features_only_with_their_offsets():
    features = features_of(example_links()["v1"])
    terms = {"link", "nhl", "hockey", "recip", "text"}
    with_terms = [f for f in features if f.rsplit(":", 1)[-1] in terms]
    assert sorted(with_terms) == sorted(["-1:link", "0:nhl", "0:hockey", "2:recip", "3:text"])


def test_tag_path_source_topic_prefixes_confidence_and_host_are_features():
    features = features_of(example_links()["v1"], same_host=False)
    assert {"tag:p/a", "tags:p/a", "src:Sports", "src:Sports/Hockey", "conf:0.7", "host:other"} <= set(
        features
    )
    rejected = features_of(example_links()["v1"], topic=None, confidence=-0.42)
    assert "src:-" in rejected and "conf:-0.4" in rejected
    assert not any(f.startswith("src:Sports") for f in rejected)


def test_radius_drops_leaves_farther_from_the_anchor():
    features = features_of(example_links()["v2"], radius=2)
    assert "-2:hockey" in features and "1:text" in features
    assert not any(f.startswith(("-3:", "-4:")) for f in features)


def test_naive_bayes_counts_and_laplace_log_odds():
    model = LinkNaiveBayes(16)
    model.add(np.array([1, 2]), 1)
    model.add(np.array([3]), 0)
    model.add(np.array([3, 3]), 0)
    assert model.counts[1].tolist()[:4] == [0, 1, 1, 0]
    assert model.counts[0][3] == 3 and model.instances.tolist() == [2, 1]
    model.fit()
    # vocabulary 3; relevant total 2, irrelevant total 3; prior log(2/3)
    expected = math.log(2 / 3) + math.log((2 / 5) / (1 / 6))
    assert model.log_odds(np.array([1])) == pytest.approx(expected)
    assert model.log_odds(np.array([9])) == pytest.approx(math.log(2 / 3))  # unseen features: no evidence
    assert model.probability(np.array([3])) < 0.5 < model.probability(np.array([1, 2]))


def test_counts_take_effect_only_at_the_next_fit():
    model = LinkNaiveBayes(8)
    model.fit()
    model.add(np.array([1]), 1)
    assert model.log_odds(np.array([1])) == 0.0
    model.fit()
    assert model.log_odds(np.array([1])) > 0.0


def test_priority_is_the_base_until_both_labels_have_enough_instances():
    apprentice = Apprentice(ApprenticeSettings(min_per_class=2, n_features=64, blend=False, weight=1.0))
    good, bad = np.array([1, 2]), np.array([5, 6])
    for label, indices in ((1, good), (1, good), (0, bad)):
        apprentice.remember(f"u{len(apprentice.pending)}", "T", indices, 0.3)
        apprentice.resolve(f"u{len(apprentice.pending) - 1}", bool(label))
    apprentice.refit()
    assert apprentice.priority("T", good, 0.3) == 0.3
    apprentice.remember("x", "T", bad, 0.3)
    apprentice.resolve("x", False)
    apprentice.refit()
    assert apprentice.priority("T", good, 0.3) > 0.5 > apprentice.priority("T", bad, 0.3)
    assert apprentice.priority("Other", good, 0.3) == 0.3  # another topic's queue has its own model


def test_weight_blends_apprentice_and_base_priorities_geometrically():
    apprentice = Apprentice(ApprenticeSettings(min_per_class=1, n_features=64, weight=0.5, blend=False))
    for url, indices, label in (("a", np.array([1]), True), ("b", np.array([2]), False)):
        apprentice.remember(url, None, indices, 1.0)
        apprentice.resolve(url, label)
    apprentice.refit()
    p = apprentice.models[""].probability(np.array([1]))
    assert apprentice.priority(None, np.array([1]), 0.25) == pytest.approx(math.sqrt(p * 0.25))


def test_state_round_trips_through_the_repository_with_the_buffer(tmp_path):
    settings = ApprenticeSettings(n_features=128, min_per_class=1, learner="naive_bayes")
    apprentice = Apprentice(settings)
    for url, topic, indices, label in (
        ("a", "T", np.array([1, 2, 2]), True),
        ("b", "T", np.array([3]), False),
        ("c", None, np.array([4]), True),
    ):
        apprentice.remember(url, topic, indices, 1.0)
        apprentice.resolve(url, label)
    apprentice.refit()
    apprentice.remember("d", "T", np.array([7]), 1.0)
    apprentice.resolve("d", False)  # still in the buffer
    with Repository(tmp_path / "r.db") as repo:
        ensure_schema(repo)
        apprentice.save(repo, 1.0)
        stored = repo.db.execute("SELECT state FROM apprentice_models").fetchall()
        assert all(json.loads(row[0])["version"] == 1 for row in stored)  # plain JSON
        restored = Apprentice(settings)
        assert restored.load(repo) == 2
    for topic, model in apprentice.models.items():
        assert np.array_equal(restored.models[topic].counts, model.counts)
        probe = np.array([1, 2, 3, 4, 7])
        assert restored.models[topic].log_odds(probe) == pytest.approx(model.log_odds(probe))
    assert [(t, i.tolist(), label) for t, i, label in restored.buffer] == [("T", [7], 0)]


def test_malformed_or_mismatched_state_is_refused():
    with pytest.raises(ApprenticeError):
        Apprentice().load_rows([("T", '{"version": 1}', "[]")])
    with pytest.raises(ApprenticeError):
        Apprentice().load_rows([("T", json.dumps({**LinkNaiveBayes(8).to_dict(), "version": 99}), "[]")])
    with pytest.raises(ApprenticeError, match="features"):
        Apprentice(ApprenticeSettings(n_features=16)).load_rows(
            [("T", json.dumps(LinkNaiveBayes(8).to_dict()), "[]")]
        )


def crawled(url, body, topic="Sports", source=None):
    entry = FrontierEntry(url, "h.test", 1.0, 1, topic, source=source)
    parsed = parse_html(body, url)
    return CrawledPage(entry, url, 200, "text/html", {}, parsed, "f", 0, len(body), 0.0)


HUB = (
    b"<html><body><ul><li>Hockey: <a href='/good'>NHL scores</a></li>"
    b"<li>Cooking: <a href='/bad'>soup recipes</a></li></ul></body></html>"
)


def test_pending_link_features_become_labelled_instances_when_the_target_is_judged(hockey_critic):
    policy = ApprenticeFocus(
        hockey_critic, ApprenticeSettings(retrain_every=2, min_per_class=1, blend=False, weight=1.0)
    )
    hub = crawled("http://h.test/hub", HUB)
    verdict = policy.score_pages([hub])[0]
    priorities = {link.url: policy.link_priority(hub, link, verdict) for link in hub.parsed.links}
    assert set(priorities.values()) == {0.5}  # untrained: the base priority
    assert set(policy.apprentice.pending) == {"http://h.test/good", "http://h.test/bad"}
    good = crawled("http://h.test/good", b"<p>Ice hockey results</p>", source=hub.url)
    bad = crawled("http://h.test/bad", b"<p>Tomato soup</p>", source=hub.url)
    policy.score_pages([good, bad])
    assert policy.apprentice.resolved == {0: 1, 1: 1}
    assert policy.apprentice.refits == 1 and not policy.apprentice.pending
    again = crawled("http://h.test/hub2", HUB)
    verdict = policy.score_pages([again])[0]
    scores = {link.url: policy.link_priority(again, link, verdict) for link in again.parsed.links}
    assert scores["http://h.test/good"] > 0.5 > scores["http://h.test/bad"]


def test_after_a_restart_pending_features_are_rebuilt_from_the_stored_link(tmp_path, hockey_critic):
    hub = crawled("http://h.test/hub", HUB)
    link = next(link for link in hub.parsed.links if link.url.endswith("/good"))
    with Repository(tmp_path / "r.db") as repo:
        record = DocumentRecord(
            hub.url,
            hub.url,
            "h.test",
            200,
            "text/html",
            "",
            "",
            "f",
            0,
            0.0,
            0,
            topic="Sports",
            confidence=0.8,
        )
        links = (LinkRecord(link.url, "h.test", link.anchor_text, link.dom_path, json.dumps(link.context)),)
        with repo.transaction():
            repo.insert_page(StoredPage(record, links, doc_id=1))
        live = ApprenticeFocus(hockey_critic)
        live.link_priority(hub, link, PageVerdict("Sports", 0.8, True))
        expected = live.apprentice.pending[link.url].indices
        restarted = ApprenticeFocus(hockey_critic)
        restarted.attach(type("C", (), {"repo": repo, "frontier": Frontier()})())
        restarted.score_pages([crawled(link.url, b"<p>hockey</p>", source=hub.url)])
    assert restarted.rebuilt == 1
    topic, indices, label = restarted.apprentice.buffer[0]
    assert (topic, label) == ("Sports", 1) and sorted(indices.tolist()) == sorted(expected.tolist())


def test_rescoring_moves_queued_entries_with_known_features_and_spares_bookmarks():
    apprentice = Apprentice(ApprenticeSettings(min_per_class=1, n_features=64, blend=False, weight=1.0))
    frontier = Frontier()
    for url, priority in (("http://a.test/x", 0.5), ("http://a.test/y", 0.5), ("http://a.test/seed", 1e9)):
        frontier.add(FrontierEntry(url, "a.test", priority, 1, "T"))
    apprentice.remember("http://a.test/x", "T", np.array([1]), 0.5)
    apprentice.remember("http://a.test/seed", "T", np.array([2]), 0.5)
    for url, indices, label in (("p", np.array([1]), True), ("q", np.array([2]), False)):
        apprentice.remember(url, "T", indices, 0.5)
        apprentice.resolve(url, label)
    apprentice.refit()
    assert rescore_entries(frontier, apprentice.rescored) == 1
    popped = frontier.pop(lambda host: 0.0, 0.0)
    assert popped.url == "http://a.test/seed" and popped.priority >= PROTECTED_PRIORITY
    popped = frontier.pop(lambda host: 0.0, 0.0)
    assert popped.url == "http://a.test/x" and popped.priority > 0.5


FIXTURE_BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"


@pytest.mark.slow
def test_crawl_command_with_apprentice_stores_its_counts_and_resumes_from_them(tmp_path, capsys):
    with serve_web_in_subprocess("fixture") as web:
        text = re.sub(
            r'HREF="([^"]+)"',
            lambda m: f'HREF="{web.map_upstream(m.group(1)) or m.group(1)}"',
            FIXTURE_BOOKMARKS.read_text(),
        )
        (tmp_path / "bookmarks.html").write_text(text)
        data = tmp_path / "node"
        data.mkdir()
        (data / "config.toml").write_text(
            '[crawler]\ndownload_delay = 0.0\nautothrottle_enabled = false\nallowed_hosts = ["127.0.0.0/8"]\n'
        )
        assert cli(["topics", "import", "--data", str(data), str(tmp_path / "bookmarks.html")]) == 0
        counts = []
        for pages in ("80", "160"):
            assert cli(["crawl", "--data", str(data), "--max-pages", pages, "--apprentice", "--quiet"]) == 0
            with Repository(data / "repository.db") as repo:
                apprentice = Apprentice()
                assert apprentice.load(repo) >= 1
                counts.append(
                    sum(m.instances.sum() for m in apprentice.models.values()) + len(apprentice.buffer)
                )
    capsys.readouterr()
    assert 0 < counts[0] < counts[1]


def test_apprentice_flag_without_topics_says_what_to_do(tmp_path, capsys):
    assert cli(["crawl", "--data", str(tmp_path), "--seed", "http://127.0.0.1:9/", "--apprentice"]) == 2
    assert "topics import" in capsys.readouterr().err
