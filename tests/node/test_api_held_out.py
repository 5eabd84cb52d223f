"""The Meta and Topics screens' accuracy is measured on held-out documents: a local model that memorised
random labels looks perfect on its training documents and no better than chance on held-out ones."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from crawler.repository import Repository
from crawler.taxonomy import read_taxonomy, store_taxonomy
from metamodels.calibration import PlattScaler
from metamodels.features import FeatureConfig, Featurizer
from metamodels.meta_classifier import MetaClassifier
from node.cooperation import filtering, latent_meta, store, training
from node.heldout import accuracy_at, held_out_curve

WORDS = [f"w{i:03d}" for i in range(400)]


def topic_folders(root, per_topic: int, seed: int, words_of) -> None:
    """Folders Alpha and Beta of per_topic text documents; words_of(rng, topic) draws a document's words."""
    rng = np.random.default_rng(seed)
    for topic in ("Alpha", "Beta"):
        folder = root / topic
        folder.mkdir(parents=True)
        for i in range(per_topic):
            (folder / f"doc{i}.txt").write_text(f"note {i}\n" + " ".join(words_of(rng, topic)))


def random_topics(root, per_topic: int = 40) -> None:
    """Two topic folders whose documents draw words from one vocabulary: the labels carry no signal."""
    topic_folders(root, per_topic, 7, lambda rng, topic: rng.choice(WORDS, size=60))


@contextmanager
def imported_topics(tmp_path):
    """A repository holding the folders under tmp_path/topics as its taxonomy, and a featurizer."""
    repo = Repository(tmp_path / "repository.db")
    try:
        store_taxonomy(repo, read_taxonomy(tmp_path / "topics"))
        store.ensure_schema(repo)
        yield repo, Featurizer(FeatureConfig())
    finally:
        repo.close()


def test_held_out_curve_sees_through_a_model_that_memorised_noise(tmp_path):
    random_topics(tmp_path / "topics")
    with imported_topics(tmp_path) as (repo, featurizer):
        data = training.labelled_data(training.training_rows(repo), "Alpha", featurizer)
        local = training.train_local(data)
        meta = MetaClassifier(models=(local,), weights=(1.0,))
        training_curve = filtering.loss_curve(latent_meta.meta_scores(meta, data.X), data.labels)
        store.save_meta(
            repo, "Alpha", loss=0.0, model=meta.to_dict(), members=[{"origin": "local"}], curve=training_curve
        )
        held = held_out_curve(repo, "Alpha", featurizer)
    assert held["documents"] == 80 and held["folds"] == 5 and held["why"] == ""
    assert accuracy_at(training_curve, 0.0) > 0.95  # the memorised training documents
    assert accuracy_at(held["curve"], 0.0) < 0.7  # unseen documents: about chance


def test_held_out_curve_says_why_without_a_meta_classifier(tmp_path):
    repo = Repository(tmp_path / "repository.db")
    try:
        store.ensure_schema(repo)
        held = held_out_curve(repo, "Alpha", Featurizer(FeatureConfig()))
    finally:
        repo.close()
    assert held["curve"] == [] and "no meta-classifier" in held["why"]


def separable_topics(root, per_topic: int = 30) -> None:
    """Two topic folders, each with its own words (and some shared ones)."""
    own = {"Alpha": WORDS[:100], "Beta": WORDS[100:200]}
    topic_folders(
        root,
        per_topic,
        3,
        lambda rng, topic: [*rng.choice(own[topic], size=40), *rng.choice(WORDS[300:], size=20)],
    )


def test_held_out_curve_scores_documents_as_the_node_filters_them_against_rival_topics(tmp_path):
    # Alpha's scaler accepts everything, as a threshold set on a crawl can; Beta claims its own documents
    separable_topics(tmp_path / "topics")
    with imported_topics(tmp_path) as (repo, featurizer):
        rows = training.training_rows(repo)
        for topic, scaler in (("Alpha", PlattScaler(a=-1.0, b=-2.0)), ("Beta", PlattScaler(a=-8.0, b=0.0))):
            model = training.train_local(training.labelled_data(rows, topic, featurizer))
            meta = MetaClassifier(models=(model,), weights=(1.0,), scalers=(scaler,))
            store.save_meta(repo, topic, loss=0.0, model=meta.to_dict(), members=[{"origin": "local"}])
            if topic == "Alpha":
                alone = held_out_curve(repo, "Alpha", featurizer)
        against_beta = held_out_curve(repo, "Alpha", featurizer)
    assert accuracy_at(alone["curve"], 0.0) == 0.5  # one-vs-rest it accepts Beta's documents too
    assert accuracy_at(against_beta["curve"], 0.0) > 0.95
