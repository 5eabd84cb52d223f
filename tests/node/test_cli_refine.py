"""`topicswarm refine`: proposals listed with how to act on them, and accepted or rejected by ID."""

from __future__ import annotations

from contextlib import nullcontext

import pytest

import node.cli.refine as cli_refine
from node.cli import main

PROPOSAL = {
    "id": 3,
    "topic": "Databases",
    "label": "vacuum, rows",
    "top_terms": ["vacuum", "rows"],
    "size": 4,
    "sample_titles": ["VACUUM", "Routine Vacuuming", "Reclaiming Disk Space", "Updating Statistics"],
}


class Client:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def refine(self, topic, k=None):
        self.calls.append(("refine", topic, k))
        return {"proposals": [dict(PROPOSAL, status="open", abstained=1)]}

    def accept_proposal(self, proposal_id, name=None):
        self.calls.append(("accept", proposal_id, name))
        learns = "4 training documents (its cluster's most confident pages) train its model: ..."
        return dict(
            PROPOSAL, id=proposal_id, label=name or PROPOSAL["label"], status="accepted", learns=learns
        )

    def reject_proposal(self, proposal_id):
        self.calls.append(("reject", proposal_id))
        return dict(PROPOSAL, id=proposal_id, status="rejected")


@pytest.fixture
def client(monkeypatch):
    stand_in = Client()
    monkeypatch.setattr(cli_refine, "connect", lambda args: nullcontext(stand_in))
    return stand_in


def test_proposals_are_listed_with_how_to_accept_one_and_k_defaults_to_the_nodes_setting(client, capsys):
    assert main(["refine", "Databases"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[3] vacuum, rows  (4 documents, 1 abstained)")
    assert out[1:4] == ["      VACUUM", "      Routine Vacuuming", "      Reclaiming Disk Space"]  # 3 of 4
    assert out[4] == "accept one with `topicswarm refine --accept ID [--name NAME]`, or --reject ID"
    assert main(["refine", "Databases", "--k", "5"]) == 0
    assert client.calls == [("refine", "Databases", None), ("refine", "Databases", 5)]


def test_a_proposal_is_accepted_under_a_name_or_rejected_by_its_id(client, capsys):
    assert main(["refine", "--accept", "3", "--name", "Maintenance"]) == 0
    assert capsys.readouterr().out.splitlines() == [  # and what the node makes of the subtopic
        "proposal 3 accepted: subtopic Databases/Maintenance",
        "  4 training documents (its cluster's most confident pages) train its model: ...",
    ]
    assert main(["refine", "--reject", "4"]) == 0
    assert capsys.readouterr().out.strip() == "proposal 4 rejected"
    assert main(["refine", "--accept", "5"]) == 0  # named after its label: the user is told how to name one
    assert "--name NAME gives a subtopic a name of your own" in capsys.readouterr().out
    assert client.calls == [("accept", 3, "Maintenance"), ("reject", 4), ("accept", 5, None)]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["refine"], "name the topic"),
        (["refine", "Databases", "--accept", "3"], "take a proposal ID, not a topic"),
        (["refine", "--reject", "3", "--name", "X"], "--name goes with --accept ID"),
        (["refine", "Databases", "--name", "X"], "--name goes with --accept ID"),
        (["refine", "Databases", "--k", "1"], "--k must be between 2 and 32"),
        (["refine", "Databases", "--k", "50"], "--k must be between 2 and 32"),
    ],
)
def test_a_refine_command_that_mixes_its_forms_says_which_to_use(client, capsys, argv, said):
    assert main(argv) == 2
    assert said in capsys.readouterr().err
    assert client.calls == []
