"""Every topic's labelled data shares the node's documents: they are featurized once while they stay as they
are, and again as soon as a row, a text or a topic changes what a topic's data must be."""

from __future__ import annotations

import numpy as np
import pytest

from crawler.repository import Repository
from metamodels.features import FeatureConfig, Featurizer
from node.cooperation import training
from node.cooperation.testing import add_document, make_repository
from node.topic_rename import rename_topic


class CountingFeaturizer(Featurizer):
    def __init__(self) -> None:
        super().__init__(FeatureConfig())
        self.texts = 0

    def transform(self, texts):
        self.texts += len(texts)
        return super().transform(texts)


@pytest.fixture
def repo(tmp_path):
    make_repository(tmp_path / "repository.db", node=0, crawled=10)
    with Repository(tmp_path / "repository.db") as repo:
        yield repo


def uncached(repo, topic):
    return training.labelled_data(training.training_rows(repo), topic, Featurizer(FeatureConfig()))


def same(a: training.LabelledData, b: training.LabelledData) -> bool:
    return a.ids == b.ids and np.array_equal(a.labels, b.labels) and (a.X != b.X).nnz == 0


def test_every_topic_gets_the_data_it_got_before_from_one_featurizing(repo):
    featurizer = CountingFeaturizer()
    cache = training.FeatureCache(featurizer)
    for topic in ("Databases", "Mathematics", "Databases", "Mathematics"):
        assert same(cache.labelled(repo, topic), uncached(repo, topic))
    assert featurizer.texts == len(training.training_rows(repo))  # once, not once a topic


def test_a_new_or_changed_training_text_is_featurized_again(repo):
    featurizer = CountingFeaturizer()
    cache = training.FeatureCache(featurizer)
    cache.labelled(repo, "Databases")
    rows = len(training.training_rows(repo))
    with repo.transaction() as db:
        db.execute("UPDATE training_documents SET text = text || ' sql join' WHERE id = 1")
    assert same(cache.labelled(repo, "Databases"), uncached(repo, "Databases"))
    with repo.transaction() as db:
        db.execute(
            "INSERT INTO training_documents (topic, polarity, url, title, text, status) "
            "VALUES ('Mathematics', 1, 'http://127.0.0.1/new', 'new', 'matrix integral proof', 'fetched')"
        )
    assert same(cache.labelled(repo, "Mathematics"), uncached(repo, "Mathematics"))
    assert featurizer.texts == rows + rows + (rows + 1)  # at first, after the change, after the addition


def test_a_renamed_topic_gets_its_labels_without_featurizing_again(repo):
    featurizer = CountingFeaturizer()
    cache = training.FeatureCache(featurizer)
    before = cache.labelled(repo, "Mathematics")
    rename_topic(repo, "Mathematics", "Maths")
    after = cache.labelled(repo, "Maths")
    assert same(after, uncached(repo, "Maths")) and np.array_equal(after.labels, before.labels)
    assert cache.labelled(repo, "Mathematics").positives == 0
    assert featurizer.texts == len(training.training_rows(repo))


def test_the_nodes_own_documents_are_featurized_again_when_one_is_added(repo):
    featurizer = CountingFeaturizer()
    cache = training.FeatureCache(featurizer)
    first = cache.own(repo)
    assert cache.own(repo) is first
    with repo.transaction() as db:
        add_document(db, "http://127.0.0.1/late", "late", "query index table", "Databases")
    later = cache.own(repo)
    assert later.shape[0] == first.shape[0] + 1
    assert (later != training.own_documents(repo, Featurizer(FeatureConfig()))).nnz == 0
