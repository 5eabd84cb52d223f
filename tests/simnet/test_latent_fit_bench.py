"""The latent fit benchmark times both thread settings on the same log-odds, then restores the setting."""

import json

from metamodels import latent_class
from simnet.bench.latent_fit import main, two_class_log_odds


def test_the_log_odds_hold_two_classes_of_the_asked_shape():
    import numpy as np

    F = two_class_log_odds(np.random.default_rng(0), 200, 3)
    assert F.shape == (200, 3)
    assert latent_class.fit_latent_class(F, [0, 1, 2], 0) is not None


def test_a_run_prints_both_medians_and_restores_the_setting(capsys):
    before = latent_class.FIT_THREADS
    assert main(["--documents", "200", "--views", "2", "--rounds", "2"]) == 0
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["default_threads_ms"] > 0 and figures["one_thread_ms"] > 0
    ratio = figures["default_threads_ms"] / figures["one_thread_ms"]
    assert abs(figures["ratio"] - ratio) < 0.02
    assert before == latent_class.FIT_THREADS
