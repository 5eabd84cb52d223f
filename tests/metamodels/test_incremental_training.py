"""A topic model retrained with the last training's parts (`TrainingMemo`) is the model a full training
gives, and only the parts whose training data changed are trained again. Documents: pages of the fixture
web committed in simnet/webs/fixture."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from selectolax.lexbor import LexborHTMLParser

import metamodels.topic_model as topic_model
from metamodels.features import FeatureConfig, Featurizer
from metamodels.memo import TrainingMemo
from metamodels.topic_model import TopicModel, TopicModelSettings, train_topic_model_from_texts

FIXTURE_WEB = Path(__file__).resolve().parents[2] / "simnet" / "webs" / "fixture"
CFG = FeatureConfig(n_features=2**16)
SETTINGS = TopicModelSettings(n_top=300)
FOLDERS = {  # topic -> the fixture web's folder its bookmarks come from
    "Databases/PostgreSQL": "postgresql",
    "Databases/SQLite": "sqlite",
    "Programming/C API": "python/c-api",
    "Programming/Tutorial": "python/tutorial",
    "Sysadmin": "apache",
}
BOOKMARKS = 4  # pages of each folder filed in its topic
ARCHETYPES = 3  # pages of the SQLite folder added as archetypes
# a document whose training data changes when SQLite gains documents: SQLite and Databases (their
# positives), PostgreSQL (its sibling's), Programming and Sysadmin (their sibling Databases'); the
# Programming subtree's children compete only with each other and keep their parts
CHANGED = {"Databases", "Databases/PostgreSQL", "Databases/SQLite", "Programming", "Sysadmin"}
UNCHANGED = {"Programming/C API", "Programming/Tutorial"}


def page_texts(folder: str) -> list[str]:
    """Title and text of the folder's pages, by path."""
    texts = []
    for path in sorted((FIXTURE_WEB / folder).rglob("*.html")):
        tree = LexborHTMLParser(path.read_bytes())
        title = tree.css_first("title")
        body = tree.body.text(separator=" ") if tree.body is not None else ""
        texts.append(f"{title.text() if title else ''}\n{body}")
    return texts


@pytest.fixture(scope="module")
def pages() -> dict[str, list[str]]:
    return {topic: page_texts(folder) for topic, folder in FOLDERS.items()} | {"": page_texts("gnuplot")}


def bookmarks(pages: dict[str, list[str]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    positives = {topic: pages[topic][:BOOKMARKS] for topic in FOLDERS}
    return positives, {"": pages[""][:BOOKMARKS]}  # the root's OTHERS folder: gnuplot pages


def with_archetypes(pages: dict[str, list[str]], topic: str) -> dict[str, list[str]]:
    """The bookmarks plus archetypes of `topic` (its pages after the bookmarks), as the focus adds them."""
    positives, _ = bookmarks(pages)
    positives[topic] = positives[topic] + pages[topic][BOOKMARKS : BOOKMARKS + ARCHETYPES]
    return positives


def train(
    positives: dict[str, list[str]],
    negatives: dict[str, list[str]],
    memo: TrainingMemo | None = None,
    settings: TopicModelSettings = SETTINGS,
    config: FeatureConfig = CFG,
) -> TopicModel:
    return train_topic_model_from_texts(
        Featurizer(config), positives, negatives, settings=settings, memo=memo
    )


class Spy:
    """Counts the SVMs and MI feature choices trained, by calling the real ones."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.svms = self.selections = 0
        svm, select = topic_model.train_linear_svm, topic_model.select_features

        def counted_svm(*args, **kwargs):
            self.svms += 1
            return svm(*args, **kwargs)

        def counted_select(*args, **kwargs):
            self.selections += 1
            return select(*args, **kwargs)

        monkeypatch.setattr(topic_model, "train_linear_svm", counted_svm)
        monkeypatch.setattr(topic_model, "select_features", counted_select)


def assert_same_model(model: TopicModel, expected: TopicModel, texts: list[str]) -> None:
    assert model == expected
    assert model.to_dict() == expected.to_dict()
    assert model.classify_texts(texts) == expected.classify_texts(texts)


@pytest.mark.parametrize(
    "settings",
    [
        SETTINGS,
        replace(SETTINGS, confidence="platt", route_by_leaves=True),
        replace(SETTINGS, balanced=True, full_space_children=2),
    ],
    ids=["mean", "platt-routers", "balanced-full-space"],
)
def test_a_retrain_after_archetypes_joined_one_topic_equals_a_training_from_scratch(pages, settings):
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    train(positives, negatives, memo, settings)
    grown = with_archetypes(pages, "Databases/SQLite")
    retrained = train(grown, negatives, memo, settings)
    unseen = [text for texts in pages.values() for text in texts[BOOKMARKS + ARCHETYPES :][:5]]
    assert_same_model(retrained, train(grown, negatives, settings=settings), unseen)
    assert memo.reused > 0


def test_a_retrain_trains_only_the_topics_whose_training_data_changed(pages, monkeypatch):
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    first = train(positives, negatives, memo)
    spy = Spy(monkeypatch)
    retrained = train(with_archetypes(pages, "Databases/SQLite"), negatives, memo)
    assert spy.svms == len(CHANGED)
    # MI choices: the root's children (3) and the Databases children (2); Programming's are reused
    assert spy.selections == 5
    for topic in UNCHANGED:
        assert retrained.models[topic] is first.models[topic]
    for topic in CHANGED:
        assert retrained.models[topic] != first.models[topic]


def test_the_same_documents_again_train_nothing(pages, monkeypatch):
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    first = train(positives, negatives, memo)
    spy = Spy(monkeypatch)
    assert train(positives, negatives, memo) == first
    assert (spy.svms, spy.selections) == (0, 0)


def test_parts_are_reused_by_content_not_by_row_number(pages, monkeypatch):
    """Archetypes of the first topic shift every later document's row: the parts are still found."""
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    train(positives, negatives, memo)
    spy = Spy(monkeypatch)
    grown = with_archetypes(pages, "Databases/PostgreSQL")
    assert next(iter(grown)) == "Databases/PostgreSQL"  # its rows come first
    train(grown, negatives, memo)
    assert spy.svms == len(CHANGED)


def test_with_idf_weights_every_row_depends_on_every_text_so_everything_is_trained_again(pages, monkeypatch):
    config = replace(CFG, idf=True)
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    train(positives, negatives, memo, config=config)
    spy = Spy(monkeypatch)
    grown = with_archetypes(pages, "Databases/SQLite")
    retrained = train(grown, negatives, memo, config=config)
    assert spy.svms == len(CHANGED | UNCHANGED)
    assert retrained == train(grown, negatives, config=config)


def test_new_settings_reuse_nothing_and_the_memo_keeps_only_the_last_models_parts(pages, monkeypatch):
    positives, negatives = bookmarks(pages)
    memo = TrainingMemo()
    train(positives, negatives, memo)
    kept = len(memo)
    spy = Spy(monkeypatch)
    train(positives, negatives, memo, replace(SETTINGS, C=0.5))
    assert spy.svms == len(CHANGED | UNCHANGED)
    assert len(memo) == kept  # the parts trained with C=1 are gone
    spy.svms = 0
    train(positives, negatives, memo)
    assert spy.svms == len(CHANGED | UNCHANGED)


def test_a_digest_tells_apart_what_a_part_is_trained_from():
    from metamodels.memo import digest

    rows = np.arange(4, dtype=np.int64)
    assert digest("svm", rows) == digest("svm", rows.copy())
    assert digest("svm", rows) != digest("svm", rows.astype(np.int32))  # dtype counts
    assert digest("svm", rows) != digest("mi", rows)
    assert digest("a", "bc") != digest("ab", "c")  # parts are length-prefixed
