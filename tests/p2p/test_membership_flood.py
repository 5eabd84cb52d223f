from __future__ import annotations

import json

from simnet.experiments import membership_flood as experiment


def test_flood_experiment_compares_both_rules_over_the_same_seeds():
    args = experiment.parse_args(["--peers", "30", "--rounds", "15", "--seeds", "2", "--invented", "100"])
    runs = {
        rule: [experiment.simulate(rule, seed, args) for seed in range(2)] for rule in ("thesis", "by_source")
    }
    for measured in runs.values():
        assert [run["seed"] for run in measured] == [0, 1]
        assert all(0.0 <= run["invented_share_mean"] <= run["invented_share_max"] <= 1.0 for run in measured)
    thesis = sum(run["invented_share_mean"] for run in runs["thesis"])
    assert sum(run["invented_share_mean"] for run in runs["by_source"]) < thesis


def test_without_invented_ids_no_list_holds_any(capsys):
    experiment.main(["--peers", "10", "--rounds", "5", "--seeds", "1", "--invented", "0"])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["rule"] for line in lines} == {"thesis", "by_source"}
    assert all(line["invented_share_max"] == 0.0 for line in lines)
