"""Training instances from stored links: every in-link of a judged page, and a whole stored crawl."""

import json

import numpy as np
import pytest

from crawler.apprentice import Apprentice, ApprenticeSettings, learn_from_crawl, stored_in_links
from crawler.apprentice_focus import ApprenticeFocus, rescore_entries
from crawler.frontier import Frontier, FrontierEntry
from crawler.link_features import cocitation_features, hashed
from crawler.link_learners import LinkLogistic, fit_blend, held_out_gain
from crawler.parse import parse_html
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import DocumentRecord, LinkRecord, Repository, StoredPage


def crawled(url, body, source=None):
    entry = FrontierEntry(url, "h.test", 1.0, 1, "Sports", source=source)
    return CrawledPage(entry, url, 200, "text/html", {}, parse_html(body, url), "f", 0, len(body), 0.0)


def store(repo, doc_id, url, body, topic=None, accepted=False):
    """A fetched page with its links, as the engine stores it."""
    page = parse_html(body, url)
    record = DocumentRecord(
        url, url, "h.test", 200, "text/html", "", page.text, f"f{doc_id}", 0, 0.0, 0,
        topic=topic, confidence=0.8 if accepted else -0.5, accepted=accepted,
    )  # fmt: skip
    links = tuple(
        LinkRecord(link.url, "h.test", link.anchor_text, link.dom_path, json.dumps(link.context))
        for link in page.links
    )
    with repo.transaction():
        repo.insert_page(StoredPage(record, links, doc_id=doc_id))


def list_page(*targets):
    items = "".join(f"<li>Hockey: <a href='{t}'>NHL {t[1:]}</a></li>" for t in targets)
    return f"<html><body><ul>{items}</ul></body></html>".encode()


def test_every_stored_source_linking_to_a_page_gives_one_instance_and_later_pages_none(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        store(repo, 1, "http://h.test/a", list_page("/t", "/t", "/u"))  # two anchors to /t: one instance
        store(repo, 2, "http://h.test/b", list_page("/t"))
        store(repo, 3, "http://h.test/t", list_page("/t"))  # the target's own link is no instance
        store(repo, 4, "http://h.test/c", list_page("/t"))  # fetched after the target
        apprentice = Apprentice()
        links = stored_in_links(repo, apprentice, ["http://h.test/t"], "Sports", before=3)
        assert [link.source for link in links] == ["http://h.test/a", "http://h.test/b"]
        assert all(link.topic == "Sports" and link.indices.size for link in links)
        every = stored_in_links(repo, apprentice, ["http://h.test/t"], "Sports")
        assert [link.source for link in every] == ["http://h.test/a", "http://h.test/b", "http://h.test/c"]
        bounded = Apprentice(ApprenticeSettings(in_links=1))
        assert len(stored_in_links(repo, bounded, ["http://h.test/t"], "Sports")) == 1


def test_a_judged_page_teaches_the_apprentice_through_each_page_linking_to_it(tmp_path, hockey_critic):
    with Repository(tmp_path / "r.db") as repo:
        store(repo, 1, "http://h.test/a", list_page("/t"))
        store(repo, 2, "http://h.test/b", list_page("/t"))
        policy = ApprenticeFocus(hockey_critic, ApprenticeSettings(retrain_every=100))
        policy.attach(type("C", (), {"repo": repo, "frontier": Frontier()})())
        policy.score_pages([crawled("http://h.test/t", b"<p>hockey</p>", source="http://h.test/a")])
        assert policy.apprentice.resolved == {0: 0, 1: 2}
        only_queuing = ApprenticeFocus(hockey_critic, ApprenticeSettings(retrain_every=100, in_links=0))
        only_queuing.attach(type("C", (), {"repo": repo, "frontier": Frontier()})())
        only_queuing.score_pages([crawled("http://h.test/t", b"<p>hockey</p>", source="http://h.test/a")])
        assert only_queuing.apprentice.resolved == {0: 0, 1: 1} and only_queuing.rebuilt == 1


def test_learning_from_a_stored_crawl_labels_links_by_their_targets_verdict(tmp_path):
    with Repository(tmp_path / "r.db") as repo:
        hub = b"<html><body><p>Hockey: <a href='/good'>NHL</a></p><p>Food: <a href='/bad'>soup</a></p>"
        store(repo, 1, "http://h.test/hub", hub)
        store(repo, 2, "http://h.test/good", b"<p>hockey</p>", topic="Sports", accepted=True)
        store(repo, 3, "http://h.test/bad", b"<p>soup</p>")
        store(repo, 4, "http://h.test/other", b"<p>x</p>", topic="Cooking", accepted=True)
        apprentice = Apprentice(ApprenticeSettings(min_per_class=1, blend=False, weight=1.0))
        assert learn_from_crawl(apprentice, repo, "Sports") == 2
    assert apprentice.resolved == {0: 1, 1: 1} and not apprentice.buffer
    page = parse_html(hub, "http://h.test/hub2")
    verdict = PageVerdict(None, -0.5, False)
    score = {
        link.url.rsplit("/", 1)[1]: apprentice.priority(
            "Sports", apprentice.features(link, link.context, page.url, verdict), 0.5
        )
        for link in page.links
    }
    assert score["good"] > 0.5 > score["bad"]


def test_the_blend_keeps_the_signal_that_predicts_the_labels_and_drops_the_one_that_does_not():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    informative = labels * 2.0 + rng.normal(0, 0.5, 400)
    noise = rng.normal(0, 1.0, 400)
    a, b, _ = fit_blend(list(zip(informative, noise, labels.tolist(), strict=True)), min_per_class=10)
    assert a > 1.0 and b < 0.2 * a
    a, b, _ = fit_blend(list(zip(noise, informative, labels.tolist(), strict=True)), min_per_class=10)
    assert b > 1.0 and a < 0.2 * b
    backwards = list(zip(-informative, noise * 0.0, labels.tolist(), strict=True))
    assert fit_blend(backwards, min_per_class=10) is None  # an inverted signal is dropped, not used
    assert fit_blend([(1.0, 0.0, 1)] * 20 + [(0.0, 0.0, 0)] * 3, min_per_class=5) is None


def resolver(apprentice):
    """resolve(indices, label, base): queue one link to a fresh URL and judge its target."""
    step = 0

    def resolve(indices, label, base):
        nonlocal step
        step += 1
        apprentice.remember(f"u{step}", "T", indices, base)
        apprentice.resolve(f"u{step}", label)

    return resolve


def test_priorities_stay_the_base_until_the_blend_beats_it_on_held_out_links_then_switch_in():
    settings = ApprenticeSettings(min_per_class=2, n_features=64, blend_min_per_class=4)
    apprentice = Apprentice(settings)
    resolve = resolver(apprentice)
    good, bad = np.array([1, 2]), np.array([5, 6])
    for _ in range(4):
        resolve(good, True, 0.5)
        resolve(bad, False, 0.5)
    apprentice.judged = 8
    apprentice.refit()  # the model is trained, but no out-of-sample row yet
    assert apprentice.models["T"].trained(2) and "T" not in apprentice.switched_in
    assert apprentice.priority("T", good, 0.2) == 0.2 and apprentice.priority("T", bad, 0.3) == 0.3
    for _ in range(4):
        resolve(good, True, 0.5)  # the base priority is the same for both: it cannot rank them
        resolve(bad, False, 0.5)
    apprentice.judged = 16
    apprentice.refit()  # rows scored by the model before it saw them: the blend is learnt and tested
    assert apprentice.switched_in == {"T": 16} and apprentice.gains["T"] > settings.switch_margin
    assert apprentice.priority("T", good, 0.2) > apprentice.priority("T", bad, 0.2)
    restored = Apprentice(apprentice.settings)
    restored.load_rows(apprentice.state_rows())
    assert restored.blends == apprentice.blends and restored.switched_in == {"T": 16}


def test_an_apprentice_that_ranks_no_better_than_the_base_never_switches_in():
    settings = ApprenticeSettings(min_per_class=2, n_features=64, blend_min_per_class=4)
    apprentice = Apprentice(settings)
    resolve = resolver(apprentice)
    rng = np.random.default_rng(1)
    for _ in range(6):  # the base priority separates the labels; the link features are the same for both
        for _ in range(4):
            resolve(np.array([1, 2]), True, float(rng.uniform(0.6, 0.9)))
            resolve(np.array([1, 2]), False, float(rng.uniform(0.1, 0.4)))
        apprentice.refit()
    assert "T" in apprentice.blends and "T" in apprentice.gains
    assert apprentice.switched_in == {}
    assert apprentice.priority("T", np.array([1, 2]), 0.37) == 0.37


def test_the_queue_is_not_rescored_before_the_switch_in_and_is_after():
    apprentice = Apprentice(ApprenticeSettings(min_per_class=2, n_features=64, blend_min_per_class=4))
    resolve = resolver(apprentice)
    good, bad = np.array([1, 2]), np.array([5, 6])
    frontier = Frontier()
    frontier.add(FrontierEntry("http://a.test/q", "a.test", 0.7, 1, "T"))  # the highest of two links into q
    apprentice.remember("http://a.test/q", "T", good, 0.4)
    for _ in range(4):
        resolve(good, True, 0.5)
        resolve(bad, False, 0.5)
    apprentice.refit()  # trained, not switched in
    assert rescore_entries(frontier, apprentice.rescored) == 0
    for _ in range(4):
        resolve(good, True, 0.5)
        resolve(bad, False, 0.5)
    apprentice.refit()
    assert "T" in apprentice.switched_in
    assert rescore_entries(frontier, apprentice.rescored) == 1


def test_held_out_gain_is_positive_only_for_a_signal_the_base_lacks():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 400)
    informative = labels * 2.0 + rng.normal(0, 0.5, 400)
    noise = rng.normal(0, 1.0, 400)
    weak_base = np.log(rng.uniform(0.1, 1.0, 400))
    gain = held_out_gain(list(zip(informative, weak_base, labels.tolist(), strict=True)), 10)
    assert gain > 0.3
    strong_base = np.log(1 / (1 + np.exp(-informative)))
    gain = held_out_gain(list(zip(noise, strong_base, labels.tolist(), strict=True)), 10)
    assert abs(gain) < 0.02
    assert held_out_gain([(1.0, 0.0, 1)] * 30 + [(0.0, 0.0, 0)] * 5, 5) is None


def test_logistic_learner_ranks_links_by_their_features_and_round_trips_as_plain_data():
    settings = ApprenticeSettings(n_features=64, min_per_class=2, learner="logistic", blend=False, weight=1.0)
    apprentice = Apprentice(settings)
    good, bad, shared = np.array([1, 2]), np.array([5, 6]), np.array([9])
    for k in range(6):
        apprentice.remember(f"g{k}", "T", np.concatenate([good, shared]), 0.5)
        apprentice.resolve(f"g{k}", True)
        apprentice.remember(f"b{k}", "T", np.concatenate([bad, shared]), 0.5)
        apprentice.resolve(f"b{k}", False)
    apprentice.refit()
    model = apprentice.models["T"]
    assert isinstance(model, LinkLogistic) and model.trained(2)
    assert apprentice.priority("T", good, 0.5) > 0.5 > apprentice.priority("T", bad, 0.5)
    restored = Apprentice(settings)
    restored.load_rows(json.loads(json.dumps(apprentice.state_rows())))
    assert restored.models["T"].log_odds(good) == pytest.approx(model.log_odds(good))
    bounded = LinkLogistic(64, max_instances=3)
    for label in (1, 0, 1, 0):
        bounded.add(np.array([label]), label)
    assert len(bounded.data) == 3 and bounded.instances.tolist() == [2.0, 1.0]


def test_the_queuing_link_keeps_its_base_priority_for_the_blend_when_its_source_is_stored(
    tmp_path, hockey_critic
):
    with Repository(tmp_path / "r.db") as repo:
        store(repo, 1, "http://h.test/a", list_page("/t"))
        store(repo, 2, "http://h.test/b", list_page("/t"))
        policy = ApprenticeFocus(hockey_critic, ApprenticeSettings(retrain_every=100))
        policy.attach(type("C", (), {"repo": repo, "frontier": Frontier()})())
        source = crawled("http://h.test/a", list_page("/t"))
        link = source.parsed.links[0]
        policy.link_priority(source, link, PageVerdict("Sports", 0.8, True))
        policy.score_pages([crawled("http://h.test/t", b"<p>hockey</p>", source="http://h.test/a")])
        assert policy.apprentice.resolved == {0: 0, 1: 2}  # a (queued) and b (stored), a once
        assert [base for _, _, base, _ in policy.apprentice._blend_due] == [0.5]


def test_cocitation_features_say_what_the_regions_judged_siblings_led_to():
    assert cocitation_features(0, 0) == []
    assert cocitation_features(0, 3) == ["sib:none"]
    assert cocitation_features(1, 3) == ["sib:any"]
    assert cocitation_features(2, 2) == ["sib:any", "sib:most"]


def test_a_judged_sibling_adds_cocitation_to_the_links_of_its_region_and_not_to_its_own_instance():
    apprentice = Apprentice(ApprenticeSettings(n_features=2**10, cocitation=True))
    people = [("http://h.test/p1", "ul/li/a"), ("http://h.test/p2", "ul/li/a"), ("http://h.test/x", "p/a")]
    apprentice.add_region_links("http://h.test/list", people)
    for url, path in people:
        apprentice.remember(url, "T", np.array([1]), 0.5, "http://h.test/list", path)
    sib_any = set(hashed(apprentice.featurizer, ["sib:any"]).tolist())
    apprentice.resolve("http://h.test/p1", True)  # learnt before p1 is judged: no cocitation of its own
    assert not sib_any & set(apprentice.buffer[-1][1].tolist())
    apprentice.judge(["http://h.test/p1"], True)
    assert sib_any <= set(apprentice.full_indices(apprentice.pending["http://h.test/p2"]).tolist())
    assert not sib_any & set(apprentice.full_indices(apprentice.pending["http://h.test/x"]).tolist())
    plain = Apprentice(ApprenticeSettings(n_features=2**10, cocitation=False))
    plain.add_region_links("http://h.test/list", people)
    plain.judge(["http://h.test/p1"], True)
    plain.remember("http://h.test/p2", "T", np.array([1]), 0.5, "http://h.test/list", "ul/li/a")
    assert plain.full_indices(plain.pending["http://h.test/p2"]).tolist() == [1]
