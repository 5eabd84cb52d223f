"""Held-out curves are measured off the request path, once per meta-classifier version, on a connection
of their own."""

from __future__ import annotations

import pytest
import trio

from metamodels.features import FeatureConfig, Featurizer
from metamodels.meta_classifier import MetaClassifier
from node import heldout
from node.cooperation import store, training
from node.heldout_cache import HeldOutCurves
from tests.node.test_api_held_out import imported_topics, separable_topics


@pytest.fixture
def built(tmp_path):
    """A repository with a meta-classifier of topic Alpha (its local model alone)."""
    separable_topics(tmp_path / "topics")
    with imported_topics(tmp_path) as (repo, featurizer):
        data = training.labelled_data(training.training_rows(repo), "Alpha", featurizer)
        meta = MetaClassifier(models=(training.train_local(data),), weights=(1.0,))
        store.save_meta(repo, "Alpha", loss=0.0, model=meta.to_dict(), members=[{"origin": "local"}])
    return tmp_path / "repository.db"


@pytest.fixture
def counted(monkeypatch):
    """held_out_curve as it is, counting its calls."""
    calls: list[str] = []
    measure = heldout.held_out_curve

    def counting(repo, topic, featurizer, *args):
        calls.append(topic)
        return measure(repo, topic, featurizer, *args)

    monkeypatch.setattr(heldout, "held_out_curve", counting)
    return calls


def curves_of(path) -> HeldOutCurves:
    featurizer = Featurizer(FeatureConfig())
    return HeldOutCurves(path, lambda: featurizer)


@pytest.mark.trio
async def test_a_curve_is_measured_once_per_meta_classifier_version(built, counted):
    curves = curves_of(built)
    try:
        first = await curves.measure("Alpha", "v1")
        again = await curves.measure("Alpha", "v1")
        assert first is again and counted == ["Alpha"]
        assert first["folds"] == 5 and first["curve"], first["why"]
        await curves.measure("Alpha", "v2")  # a new build: measured again
        assert counted == ["Alpha", "Alpha"]
        assert curves.ready("Alpha", "v1") is None  # the old version's curve is gone
    finally:
        curves.close()


@pytest.mark.trio
async def test_requests_for_a_curve_being_measured_wait_for_that_measurement(built, counted):
    curves = curves_of(built)
    results = []

    async def ask() -> None:
        results.append(await curves.measure("Alpha", "v1"))

    try:
        async with trio.open_nursery() as nursery:
            for _ in range(3):
                nursery.start_soon(ask)
    finally:
        curves.close()
    assert counted == ["Alpha"]
    assert len(results) == 3 and all(r is results[0] for r in results)


@pytest.mark.trio
async def test_a_curve_started_in_the_background_is_ready_when_measured(built, counted):
    curves = curves_of(built)
    try:
        async with trio.open_nursery() as nursery:
            curves.start(nursery, "Alpha", "v1")
            curves.start(nursery, "Alpha", "v1")  # a second poll while it is measured starts nothing
            assert curves.measuring("Alpha", "v1") and curves.ready("Alpha", "v1") is None
        assert not curves.measuring("Alpha", "v1")
        held = curves.ready("Alpha", "v1")
        assert held is not None and held["curve"] and counted == ["Alpha"]
        assert await curves.measure("Alpha", "v1") is held
    finally:
        curves.close()


@pytest.mark.trio
@pytest.mark.parametrize("error", [ValueError, RuntimeError])  # a bad model, or a bug: neither stops the node
async def test_a_curve_that_cannot_be_measured_says_why_once(built, monkeypatch, error):
    calls = []

    def broken(repo, topic, featurizer, *args):
        calls.append(topic)
        raise error("a stored model of another feature space")

    monkeypatch.setattr(heldout, "held_out_curve", broken)
    curves = curves_of(built)
    try:
        async with trio.open_nursery() as nursery:
            curves.start(nursery, "Alpha", "v1")  # a failure in the background does not take the node down
        held = curves.ready("Alpha", "v1")
        assert held is not None and held["curve"] == []
        assert "could not be measured: a stored model of another feature space" in held["why"]
        assert await curves.measure("Alpha", "v1") is held and calls == ["Alpha"]
    finally:
        curves.close()


@pytest.mark.trio
async def test_a_cancelled_measurement_leaves_nobody_waiting_and_is_measured_when_asked_again(built, counted):
    curves = curves_of(built)
    try:
        with trio.CancelScope() as scope:
            scope.cancel()
            await curves.measure("Alpha", "v1")
        assert not curves.measuring("Alpha", "v1") and curves.ready("Alpha", "v1") is None
        with trio.fail_after(60):
            held = await curves.measure("Alpha", "v1")
    finally:
        curves.close()
    assert held["curve"] and counted == ["Alpha"]
