"""`topicswarm meta build|show` lead with the held-out accuracy and label the training-document figure."""

from __future__ import annotations

import argparse
import json

import pytest

import node.cli.meta as cli_meta
from node.cli.common import CliError
from node.client import NodeError
from node.cooperation import latent_meta

BUILD = {
    "topic": "Databases",
    "peers_used": 1,
    "peers_needed": 2,
    "predicted": {"loss": 0.4444, "accuracy": 0.8},
    "measured": {"accuracy": 1.0},
    "kept": 10,
    "abstained": 3,
}
META = {
    "topic": "Databases",
    "loss": 0.2,
    "kept": 10,
    "abstained": 3,
    "curve": [{"loss": 0.0, "accuracy": 1.0}, {"loss": 0.2, "accuracy": 1.0}],
    "held_out": {
        "curve": [{"loss": 0.0, "accuracy": 0.818}, {"loss": 0.2, "accuracy": 0.889}],
        "documents": 11,
        "folds": 5,
        "why": "",
    },
}


def test_build_reports_held_out_accuracy_first_and_training_accuracy_as_optimistic():
    text = cli_meta.build_text(BUILD, META)
    assert text.splitlines()[0] == "meta-classifier for Databases: its own model and 1 peer model"
    wanting = cli_meta.build_text(dict(BUILD, peers_needed=4), META).splitlines()[0]
    assert wanting.endswith("its own model and 1 peer model (the estimate asks for 3 peer models)")
    assert "filtering at loss 0.20: 10 documents kept, 3 abstained" in text
    assert "accuracy at loss 0.20: 0.889 held-out (5-fold cross-validation on 11 labelled documents)" in text
    assert "on its training documents 1.000 (optimistic)" in text


def test_build_without_held_out_curve_says_why():
    meta = dict(META, held_out={"curve": [], "documents": 3, "folds": 5, "why": "too few labelled documents"})
    assert "held-out n/a (too few labelled documents)" in cli_meta.build_text(BUILD, meta)


def test_show_prints_held_out_beside_training_accuracy(monkeypatch, capsys):
    class Client:
        def meta(self, topic):
            return META

    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(Client()))
    args = argparse.Namespace(topic="Databases", json=False, data=None)
    assert cli_meta.run_meta_show(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "  loss   held-out  training"
    assert lines[3].split() == ["0.000", "0.818", "1.000"]


class _Context:
    def __init__(self, value):
        self.value = value

    def __enter__(self):
        return self.value

    def __exit__(self, *exc):
        return False


def test_show_lists_the_models_combined_with_their_weights_in_the_meta_classifier(monkeypatch, capsys):
    peer = "12D3KooWJawjDQDt8oFAYspDVuS8b81P6kjbBiRYR5Pjp9wNRBrg"
    members = [
        {"origin": peer, "weight": 4.595, "accuracy_local": None, "evaluated": 0},
        {"origin": "local", "weight": 0.647, "accuracy_local": 0.8, "evaluated": 20},
    ]

    class Client:
        def meta(self, topic):
            return dict(META, models=members)

    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(Client()))
    assert cli_meta.run_meta_show(argparse.Namespace(topic="Databases", json=False, data=None)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-3].startswith("  models combined (weight in this meta-classifier")
    assert lines[-2].split() == ["own", "model", "0.647", "0.800", "on", "20"]
    assert lines[-1].split()[:2] == ["12D3KooWJa…wNRBrg", "4.595"] and "not measured" in lines[-1]


def test_build_with_no_peer_model_prints_no_estimate_from_peers_reports():
    alone = dict(BUILD, peers_used=0, peers_needed=1, predicted={"loss": 0.0, "accuracy": 0.5})
    text = cli_meta.build_text(alone, META)
    first = text.splitlines()[0]
    assert first.endswith("its own model alone (no peer model of this topic could be used yet)")
    assert "estimate from peers' reports" not in text
    text = cli_meta.build_text(BUILD, META)
    assert "for unanimous decisions of 2 models: accuracy 0.800, abstaining on 0.444 of the documents" in text
    unmeasured = dict(
        BUILD, predicted={"loss": None, "accuracy": None, "why": "no model's accuracy could be"}
    )
    assert "no estimate from peers' reports: no model's accuracy could be" in cli_meta.build_text(
        unmeasured, META
    )


def test_a_build_whose_own_model_meets_the_error_goal_by_the_estimate_says_so():
    met = dict(BUILD, peers_used=0, peers_needed=0, error_goal=0.05)
    assert cli_meta.build_text(met, META).splitlines()[0] == (
        "meta-classifier for Databases: its own model alone (by the estimate from the models' measured "
        "accuracies it meets the error goal 0.05 by itself, so no peer model was combined)"
    )
    # no count of models meets the goal (every peer asked), and no peer model came
    unmet = dict(BUILD, peers_used=0, peers_needed=None, error_goal=0.05)
    assert (
        cli_meta.build_text(unmet, META)
        .splitlines()[0]
        .endswith("no peer model of this topic could be used yet)")
    )
    # peers_needed counts peer models as peers_used does (older nodes counted the own model in)
    asked = dict(BUILD, peers_used=1, peers_needed=2, error_goal=0.05)
    assert cli_meta.build_text(asked, META).splitlines()[0].endswith("(the estimate asks for 2 peer models)")


def test_show_says_how_the_models_are_combined(monkeypatch, capsys):
    members = [{"origin": "local", "weight": 2.5}, {"origin": "12D3KooWpeer", "weight": 3.1}]
    model = {
        "latent": [
            {"views": [0], "prior": 0.31, "means": [[-2.0], [1.0]], "variances": [[1.0], [1.0]]},
            {"views": [0, 1], "prior": 0.28, "means": [[-2.0, -1], [1.0, 1]], "variances": [[1, 1], [1, 1]]},
        ]
    }
    combined = latent_meta.combination(model, members)
    assert combined == {
        "rule": "unanimous latent class models",
        "voters": [
            {"models": ["local"], "on_topic_share": 0.31},
            {"models": ["local", "12D3KooWpeer"], "on_topic_share": 0.28},
        ],
    }
    assert latent_meta.combination({"aggregation": "log_odds_mean"}, members)["rule"] == "log_odds_mean"

    class Client:
        def meta(self, topic):
            rivals = ["Mathematics", "Sysadmin"]
            return dict(META, models=members, combination=combined, rival_topics=rivals)

    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(Client()))
    assert cli_meta.run_meta_show(argparse.Namespace(topic="Databases", json=False, data=None)) == 0
    labels_voter = {
        "rule": "unanimous latent class models",
        "voters": [{"models": ["local"], "on_topic_share": None}],
    }
    assert cli_meta.combination_line(labels_voter).endswith("own model (its labels' threshold)")
    combined_line, rivals_line = capsys.readouterr().out.splitlines()[-2:]
    assert combined_line == (
        "  combined by: unanimous latent class models: own model (0.310 of the pages on topic); "
        "2 models (0.280 of the pages on topic)"
    )
    assert rivals_line.endswith(
        "filtered against the claims of the topics it competes with: Mathematics, Sysadmin"
    )


def test_a_new_loss_prints_how_the_meta_classifier_built_again_for_it_combines_its_models(
    monkeypatch, capsys
):
    combination = {"rule": "latent class model", "voters": [{"models": ["local"], "on_topic_share": 0.25}]}

    class Client:
        def set_loss(self, topic, loss):
            return {
                "topic": topic,
                "loss": loss,
                "kept": 7,
                "rejected": 21,
                "abstained": 7,
                "combination": combination,
            }

    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(Client()))
    args = argparse.Namespace(topic="Databases", loss=0.3, json=False, data=None)
    assert cli_meta.run_meta_loss(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "loss 0.300: 7 documents kept, 21 rejected, 7 abstained",
        "  combined by: latent class model: own model (0.250 of the pages on topic)",
    ]


class _Community:
    """A node with three topics whose Sysadmin topic has no peer model to build from yet."""

    def __init__(self, status: int = 409):
        self.status = status
        self.built: list[str] = []

    def topics(self):
        return {"topics": [{"key": "Databases"}, {"key": "Sysadmin"}, {"key": "Mathematics"}]}

    def build_meta(self, topic, loss, error_goal=None):
        if topic == "Sysadmin":
            raise NodeError("conflict", "no model of Sysadmin yet: let the crawl run", self.status)
        self.built.append(topic)
        return dict(BUILD, topic=topic)

    def meta(self, topic):
        return dict(META, topic=topic)

    def set_loss(self, topic, loss):
        self.build_meta(topic, loss)
        return {"topic": topic, "loss": loss, "kept": 7, "abstained": 2}


def test_build_without_a_topic_builds_every_topic_and_names_the_ones_it_could_not(monkeypatch, capsys):
    node = _Community()
    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(node))
    args = argparse.Namespace(topic=None, loss=0.2, error_goal=None, json=False, data=None)
    assert cli_meta.run_meta_build(args) == 1
    assert node.built == ["Databases", "Mathematics"]
    out, err = capsys.readouterr()
    firsts = [line for line in out.splitlines() if line.startswith("meta-classifier for")]
    assert [line.split(":")[0] for line in firsts] == [
        "meta-classifier for Databases",
        "meta-classifier for Mathematics",
    ]
    assert (
        err.strip() == "meta-classifier for Sysadmin: not done: no model of Sysadmin yet: let the crawl run"
    )

    assert cli_meta.run_meta_build(argparse.Namespace(**{**vars(args), "json": True})) == 1
    answer = json.loads(capsys.readouterr().out)
    assert sorted(answer["topics"]) == ["Databases", "Mathematics"]
    assert answer["failed"] == {"Sysadmin": "no model of Sysadmin yet: let the crawl run"}


def test_build_of_one_topic_answers_as_before_and_a_refusal_is_an_error(monkeypatch, capsys):
    node = _Community()
    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(node))
    args = argparse.Namespace(topic="Databases", loss=0.2, error_goal=None, json=True, data=None)
    assert cli_meta.run_meta_build(args) == 0
    assert json.loads(capsys.readouterr().out)["topic"] == "Databases"
    with pytest.raises(NodeError):
        cli_meta.run_meta_build(argparse.Namespace(**{**vars(args), "topic": "Sysadmin"}))


def test_a_node_that_cannot_cooperate_fails_the_every_topic_build_at_once(monkeypatch):
    node = _Community(status=503)
    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(node))
    args = argparse.Namespace(topic=None, loss=0.2, error_goal=None, json=False, data=None)
    with pytest.raises(NodeError):
        cli_meta.run_meta_build(args)
    assert node.built == ["Databases"]


def test_a_new_loss_for_every_topic_prefixes_each_line_with_its_topic(monkeypatch, capsys):
    monkeypatch.setattr(cli_meta, "connect", lambda args: _Context(_Community()))
    args = argparse.Namespace(topic=None, loss=0.3, json=False, data=None)
    assert cli_meta.run_meta_loss(args) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "Databases: loss 0.300: 7 documents kept, 2 abstained",
        "Mathematics: loss 0.300: 7 documents kept, 2 abstained",
    ]
    assert err.startswith("loss for Sysadmin: not done:")


def test_every_topic_of_a_node_without_topics_says_how_to_get_some():
    class Empty(_Community):
        def topics(self):
            return {"topics": []}

    with pytest.raises(CliError, match="topics import"):
        cli_meta.each_topic(Empty(), None, lambda topic: None)


def test_the_prediction_is_none_with_the_reason_when_no_accuracy_was_measured():
    from node.cooperation.meta_protocol import predicted_figures

    unmeasured = predicted_figures([], 0.5, 0.0, 2)
    assert unmeasured["accuracy"] is None and unmeasured["loss"] is None and "measured" in unmeasured["why"]
    measured = predicted_figures(
        [0.9, 0.8], 0.85, 0.0, 2
    )  # independent: both right 0.7225, both wrong 0.0225
    assert measured["loss"] == pytest.approx(1 - 0.7225 - 0.0225)
    assert measured["accuracy"] == pytest.approx(0.7225 / 0.745)


@pytest.mark.parametrize(
    "argv",
    [
        ["meta", "build", "--loss", "1.5"],
        ["meta", "build", "--loss", "nan"],
        ["meta", "loss", "--loss", "-0.1"],
        ["meta", "build", "--loss", "0.2", "--error-goal", "0"],
    ],
)
def test_a_loss_or_error_goal_out_of_range_is_refused_once_before_any_topic_is_asked(argv, capsys):
    from node.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    assert capsys.readouterr().err.count("error: argument") == 1


def test_a_loss_of_zero_is_a_loss():
    from node.cli import build_parser

    assert build_parser().parse_args(["meta", "build", "--loss", "0"]).loss == 0.0
