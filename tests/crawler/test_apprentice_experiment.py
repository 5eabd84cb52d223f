import json
from pathlib import Path

import pytest

from crawler.focus import in_subtree
from crawler.policy import PageVerdict
from crawler.taxonomy import LOCAL, NEGATIVE, POSITIVE, ROOT
from simnet.experiments import apprentice as experiment
from simnet.web import load_web
from simnet.web.layout import WebLayout

FIXTURE_BOOKMARKS = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture-bookmarks.html"


class FakeBase:
    """A base policy whose verdicts and priorities are given."""

    def __init__(self, verdicts):
        self.verdicts = verdicts
        self.other = "kept"

    def seeds(self):
        return {"A": ["http://a/1"], "A/B": ["http://a/2"], "C": ["http://c/1"]}

    def score_pages(self, pages):
        return self.verdicts

    def link_priority(self, page, link, verdict):
        return 0.5 if verdict.accepted else 0.25


def test_one_topic_focus_rejects_pages_of_other_topics_and_files_every_link_in_its_topic():
    verdicts = [PageVerdict("A/B", 0.8, True), PageVerdict("C", 0.9, True), PageVerdict(None, 0.1, False)]
    policy = experiment.OneTopicFocus(FakeBase(verdicts), "A")
    held = policy.score_pages([None, None, None])
    assert held[0] == verdicts[0]
    assert held[1] == PageVerdict(None, 0.9, False)
    assert held[2] == PageVerdict(None, 0.1, False)
    assert policy.seeds() == {"A": ["http://a/1", "http://a/2"]}
    assert policy.link_topic(None, held[1]) == "A"
    assert policy.link_priority(None, None, held[1]) == 0.25  # the base tunnels a rejected page's links
    assert policy.other == "kept"


def test_compare_counts_irrelevant_fetches_over_the_same_number_of_fetches():
    measured = {
        "without": ([True, False, False, True, False, False], [True, True, False, True, False, True]),
        "with": ([True, True, False, True], [True, True, True, True]),
    }
    result = experiment.compare(measured)
    assert result["compared"] == 4
    assert result["irrelevant_without"] == 2 and result["irrelevant_with"] == 1
    assert result["reduction"] == 0.5
    assert result["irrelevant_truth_without"] == 1 and result["irrelevant_truth_with"] == 0
    assert result["reduction_truth"] == 1.0
    assert result["fetched_without"] == 6 and result["fetched_with"] == 4
    assert "irrelevant_truth_floor" not in result
    assert experiment.compare(measured, target_pages=3)["irrelevant_truth_floor"] == 1
    assert experiment.compare(measured, target_pages=9)["irrelevant_truth_floor"] == 0


def test_harvest_curves_count_relevant_fetches_per_step_and_combine_topics_into_rates():
    a = experiment.harvest_curve([True, False, True, True, False], [True] * 5, step=2)
    assert a == {"pages": [2, 4, 5], "critic": [1, 3, 3], "truth": [2, 4, 5]}
    b = experiment.harvest_curve([False] * 5, [False] * 5, step=2)
    combined = experiment.combined_curve([a, b])
    assert combined["pages"] == [2, 4, 5]
    assert combined["harvest_rate"] == [0.25, 0.375, 0.3]
    assert combined["harvest_rate_truth"] == [0.5, 0.5, 0.5]


def test_critic_examples_are_local_positives_of_the_target_group_and_root_negatives_of_the_others():
    corpus = load_web("fixture")
    docs = experiment.critic_examples(corpus, {"Databases": "databases"}, per_group=3)
    positives = [d for d in docs if d.polarity == POSITIVE]
    negatives = [d for d in docs if d.polarity == NEGATIVE]
    assert 0 < len(positives) <= 3 and all(d.topic == "Databases" for d in positives)
    groups = experiment.group_pages(corpus)
    assert {Path(d.path) for d in positives} <= set(groups["databases"])
    assert negatives and all(d.topic == ROOT for d in negatives)
    assert not {Path(d.path) for d in negatives} & set(groups["databases"])
    assert all(d.url == "" and d.status == LOCAL and d.text for d in docs)  # never crawl seeds
    again = experiment.critic_examples(corpus, {"Databases": "databases"}, per_group=3)
    assert [d.path for d in again] == [d.path for d in docs]  # a fixed sample


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [None, "online"])
def test_experiment_prints_reductions_at_equal_budgets_and_harvest_curves_for_every_topic(capsys, protocol):
    argv = ["--web", "fixture", "--bookmarks", str(FIXTURE_BOOKMARKS), "--pages", "120"]
    argv += ["--protocol", protocol] if protocol else []  # the default is the paper's offline protocol
    assert experiment.main([*argv, "--critic-examples", "10", "--retrain-every", "40"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["protocol"] == experiment.PROTOCOLS[protocol or experiment.OFFLINE]
    assert set(report["topics"]) == {"Databases", "Sysadmin", "Mathematics"}
    for numbers in report["topics"].values():
        assert {"irrelevant_without", "irrelevant_with", "reduction", "compared"} <= set(numbers)
        budget = min(numbers["fetched_without"], numbers["fetched_with"])
        assert numbers["compared"] == min(budget, numbers["pool"])
        assert numbers["at_budget"]["compared"] == budget and numbers["protocol"]
    for variant in ("without", "with"):
        curve = report["curves"][variant]
        assert curve["pages"][-1] <= 120 and len(curve["harvest_rate"]) == len(curve["pages"])
    assert set(report["critic"]) == set(report["topics"])
    assert all(0.0 <= c["precision"] <= 1.0 and 0.0 <= c["recall"] <= 1.0 for c in report["critic"].values())
    for topic, learner in report["apprentice"].items():
        assert learner["instances"]["relevant"] + learner["instances"]["irrelevant"] > 0
        assert (learner["offline_instances"] > 0) == (protocol is None)
        assert report["topics"][topic]["switch_in"] == learner["switch_in"]
        assert "after_switch_in" in report["topics"][topic]


def test_compare_cuts_the_budget_to_the_relevant_pool_and_keeps_the_full_budget_figures():
    measured = {
        "without": ([False, True, False, True, False, False], [False] * 6),
        "with": ([True, True, False, False, False, False], [False] * 6),
    }
    rows = {
        "without": [(f"http://a/{i}",) for i in (1, 2, 3, 4, 5, 6)],
        "with": [(f"http://a/{i}",) for i in (2, 4, 7, 8, 9, 10)],
    }
    pool = experiment.relevant_pool(rows, {v: measured[v][0] for v in experiment.VARIANTS})
    assert pool == 2  # pages 2 and 4, accepted in both crawls
    result = experiment.compare(measured, pool=pool)
    assert result["compared"] == 2 and result["pool"] == 2 and "protocol" in result
    assert result["irrelevant_without"] == 1 and result["irrelevant_with"] == 0 and result["reduction"] == 1.0
    assert result["at_budget"]["compared"] == 6
    assert result["at_budget"]["irrelevant_without"] == 4 and result["at_budget"]["irrelevant_with"] == 4
    assert experiment.overlap(rows, 3) == round(2 / 3, 4)


def test_after_switch_in_counts_only_the_fetches_from_the_switch_in_and_keeps_the_whole_comparison():
    measured = {
        "without": ([False, True, False, False, True, False], [False] * 6),
        "with": ([False, False, False, True, True, True], [False, False, False, True, True, False]),
    }
    result = experiment.compare(measured, switch_in=3)
    assert result["irrelevant_without"] == 4 and result["irrelevant_with"] == 3  # whole: 6 fetches
    after = result["after_switch_in"]
    assert after["from_fetch"] == 3 and after["compared"] == 3
    assert after["irrelevant_without"] == 2 and after["irrelevant_with"] == 0 and after["reduction"] == 1.0
    assert after["irrelevant_truth_without"] == 3 and after["irrelevant_truth_with"] == 1
    assert experiment.compare(measured, switch_in=6)["after_switch_in"] is None  # past the comparison
    assert experiment.compare(measured)["after_switch_in"] is None  # never switched in


def baseline_pairs(repo, topic):
    """(source, target, relevant) of every stored link (u, v) with u fetched before v, both fetched, v
    labelled by its stored verdict: what the offline apprentice may learn from, computed independently."""
    pairs = set()
    documents = repo.db.execute(
        "SELECT id, url, final_url, topic, accepted FROM documents WHERE duplicate_of IS NULL ORDER BY id"
    ).fetchall()
    for doc_id, url, final_url, doc_topic, accepted in documents:
        relevant = bool(accepted) and doc_topic is not None and in_subtree(doc_topic, topic)
        for (source,) in repo.db.execute(
            "SELECT DISTINCT d.final_url FROM links l JOIN documents d ON l.source_id = d.id "
            "WHERE l.kind = 'a' AND d.duplicate_of IS NULL AND d.id < ? AND l.target_url IN (?, ?) "
            "AND d.final_url NOT IN (?, ?)",
            (doc_id, url, final_url, url, final_url),
        ):
            pairs.add((source, final_url, relevant))
    return pairs


@pytest.mark.slow
def test_offline_apprentice_learns_only_the_baseline_crawls_links_labelled_by_the_critic(monkeypatch, capsys):
    """The default protocol trains on the crawl without the apprentice: every instance must be a stored link
    between two pages that crawl fetched, labelled by the critic's stored verdict, and the ground truth of
    the web must not be consulted while training (a leak would make the reduction dishonest)."""
    seen = {}
    learn = experiment.learn_from_crawl

    def spy(apprentice, repo, topic):
        pairs = baseline_pairs(repo, topic)
        fetched = {url for (url,) in repo.db.execute("SELECT final_url FROM documents")}
        learnt = []
        original = apprentice.learn

        def learn_one(link, relevant):
            learnt.append((link, relevant))
            original(link, relevant)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(apprentice, "learn", learn_one)
            patch.setattr(WebLayout, "label_of", lambda *a: pytest.fail("ground truth read in training"))
            added = learn(apprentice, repo, topic)
        seen[topic] = {"added": added, "pairs": pairs, "learnt": learnt, "fetched": fetched}
        return added

    monkeypatch.setattr(experiment, "learn_from_crawl", spy)
    argv = ["--web", "fixture", "--bookmarks", str(FIXTURE_BOOKMARKS), "--pages", "60"]
    argv += ["--topics", "Databases"]
    assert experiment.main([*argv, "--critic-examples", "10", "--retrain-every", "20"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert "offline" in report["protocol"]
    found = seen["Databases"]
    assert found["learnt"] and found["added"] == len(found["learnt"])
    assert report["apprentice"]["Databases"]["offline_instances"] == found["added"]
    assert {link.source for link, _ in found["learnt"]} <= found["fetched"]
    by_pair = {(source, target): relevant for source, target, relevant in found["pairs"]}
    assert len(found["learnt"]) == len(by_pair)  # one instance per (u, v), none for unfetched targets
    labels = sorted(relevant for _, relevant in found["learnt"])
    assert labels == sorted(by_pair.values())  # the stored critic verdicts, not the ground truth
