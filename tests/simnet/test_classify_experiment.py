from metamodels.topic_model import TopicModelSettings
from simnet.experiments.classify import CANDIDATES, candidate_settings, micro_f1, pick


def test_hold_out_pick_takes_the_best_score_and_the_first_listed_on_a_tie():
    assert pick({"thesis": 0.80, "routed": 0.85, "platt": 0.84}) == "routed"
    assert pick({"thesis": 0.85, "routed": 0.85, "platt": 0.84}) == "thesis"
    assert pick({"thesis": 0.80, "routed": 0.85, "platt": 0.85}) == "routed"


def test_candidates_start_with_the_thesis_model_and_are_valid_settings():
    _, changes = CANDIDATES[0]
    assert candidate_settings(TopicModelSettings(), changes) == TopicModelSettings(n_top=2000)
    names = [n for n, _ in CANDIDATES]
    assert len(set(names)) == len(names)
    for _, changes in CANDIDATES:
        settings = candidate_settings(TopicModelSettings(), changes)
        assert settings.df_candidates >= settings.n_top


def test_micro_f1_counts_a_rejected_document_as_a_miss_only():
    # 2 of 3 assigned are right, 2 of 4 documents found: P = 2/3, R = 1/2
    assert micro_f1(["a", "b", "", "c"], ["a", "b", "c", "a"]) == 2 * (2 / 3) * 0.5 / (2 / 3 + 0.5)
