"""The Peers screen's model rows say how many documents a measured accuracy rests on."""

from __future__ import annotations

import math

from tui.records import ReceivedModel
from tui.screens.peers import _accuracy_of


def _model(**fields) -> ReceivedModel:
    data = {"topic": "Databases", "origin": "12D3KooWPeerA", "version": "3", "kind": "linear"}
    return ReceivedModel.from_json({**data, **fields})


def test_accuracy_is_shown_with_the_documents_it_was_measured_on():
    assert _accuracy_of(_model(accuracy_local=1.0, evaluated=1, weight=0.0)) == "1.00 of 1"
    assert _accuracy_of(_model(accuracy_local=0.889, evaluated=27, weight=2.1)) == "0.89 of 27"


def test_unmeasured_model_shows_a_dash_and_a_bad_count_reads_as_none():
    assert _accuracy_of(_model()) == "–"
    assert _model(accuracy_local=0.5, evaluated=math.inf).evaluated == 0
    assert _model(accuracy_local=0.5, evaluated="many").evaluated == 0
    assert _accuracy_of(_model(accuracy_local=0.5, evaluated="many")) == "0.50"
