"""The Meta and Topics screens' accuracy is measured on held-out documents: a local model that memorised
random labels looks perfect on its training documents and no better than chance on held-out ones."""

from __future__ import annotations

import numpy as np

from crawler.repository import Repository
from crawler.taxonomy import read_taxonomy, store_taxonomy
from metamodels.features import FeatureConfig, Featurizer
from metamodels.meta_classifier import MetaClassifier
from node.cooperation import learning, store
from node.heldout import accuracy_at, held_out_curve

WORDS = [f"w{i:03d}" for i in range(400)]


def random_topics(root, per_topic: int = 40) -> None:
    """Two topic folders whose documents draw words from one vocabulary: the labels carry no signal."""
    rng = np.random.default_rng(7)
    for topic in ("Alpha", "Beta"):
        folder = root / topic
        folder.mkdir(parents=True)
        for i in range(per_topic):
            words = rng.choice(WORDS, size=60)
            (folder / f"doc{i}.txt").write_text(f"note {i}\n" + " ".join(words))


def test_held_out_curve_sees_through_a_model_that_memorised_noise(tmp_path):
    random_topics(tmp_path / "topics")
    repo = Repository(tmp_path / "repository.db")
    try:
        store_taxonomy(repo, read_taxonomy(tmp_path / "topics"))
        store.ensure_schema(repo)
        featurizer = Featurizer(FeatureConfig())
        data = learning.labelled_data(learning.training_rows(repo), "Alpha", featurizer)
        local = learning.train_local(data)
        meta = MetaClassifier(models=(local,), weights=(1.0,))
        training_curve = learning.loss_curve(learning.meta_scores(meta, data.X), data.labels)
        store.save_meta(
            repo, "Alpha", loss=0.0, model=meta.to_dict(), members=[{"origin": "local"}], curve=training_curve
        )
        held = held_out_curve(repo, "Alpha", featurizer)
    finally:
        repo.close()
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
