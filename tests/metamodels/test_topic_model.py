from __future__ import annotations

from dataclasses import replace

import msgpack
import numpy as np
import pytest

from metamodels.errors import ModelFormatError, TrainingDataError
from metamodels.features import FeatureConfig, Featurizer
from metamodels.topic_model import (
    TopicModel,
    TopicModelSettings,
    topic_key,
    train_topic_model_from_texts,
)

CFG = FeatureConfig(n_features=2**16)
SETTINGS = TopicModelSettings(min_df=1, n_top=50, min_topic_features=2)

POSITIVES = {
    "Science/Math": [
        "theorem proof algebra lemma integral",
        "algebra theorem matrix proof equation",
        "integral equation lemma matrix theorem",
        "kolmogorov theorem proof lemma algebra",
    ],
    "Science/Physics": [
        "quantum particle energy electron field",
        "electron energy photon quantum experiment",
        "particle photon field energy experiment",
    ],
    "Arts": [
        "painting sculptor museum gallery canvas",
        "museum gallery portrait painting exhibition",
        "sculptor canvas exhibition portrait museum",
    ],
}
NEGATIVES = {
    "": ["football match goal league team", "team league season football coach"],
    "Science": ["astrology horoscope zodiac planet sign", "horoscope zodiac sign astrology star"],
}


@pytest.fixture(scope="module")
def model() -> TopicModel:
    return train_topic_model_from_texts(Featurizer(CFG), POSITIVES, NEGATIVES, settings=SETTINGS)


def test_topic_keys_are_normalised_paths():
    assert topic_key(" Science / Applied  Math /") == "Science/Applied Math"
    assert topic_key(["Science", "Math"]) == "Science/Math"


def test_training_sets_follow_equations_2_32_and_2_33(model):
    counts = {t: (m.calibration.n_positive, m.calibration.n_negative) for t, m in model.models.items()}
    # Science: own subtree (4 math + 3 physics) vs sibling Arts (3), its own OTHERS (2) and the root's (2)
    assert counts["Science"] == (7, 7)
    # Math: 4 positives vs sibling Physics (3) and the parent's OTHERS (2)
    assert counts["Science/Math"] == (4, 5)
    assert counts["Arts"] == (3, 9)
    assert model.children("") == ("Arts", "Science")
    assert model.children("Science") == ("Science/Math", "Science/Physics")


def test_top_down_classification_reaches_the_right_leaf(model):
    verdicts = model.classify_texts(
        [
            "a lemma and a theorem with proof",
            "the electron and photon energy",
            "portrait in the gallery museum",
        ]
    )
    assert [v.topic for v in verdicts] == ["Science/Math", "Science/Physics", "Arts"]
    assert verdicts[0].path[0][0] == "Science"
    assert all(v.accepted and v.confidence > 0 for v in verdicts)


def test_document_from_a_negative_folder_is_rejected_at_the_root(model):
    verdict = model.classify_texts(["football league match with the team coach"])[0]
    assert verdict.topic == ""
    assert not verdict.accepted


def test_document_with_fewer_than_n_w_topic_features_stays_at_the_root(model):
    texts = ["theorem", "theorem lemma proof"]
    assert [v.topic for v in model.classify_texts(texts)] == ["", "Science/Math"]


def test_high_threshold_keeps_documents_at_the_inner_node(model):
    text = ["a lemma and a theorem with proof"]
    assert model.classify_texts(text, threshold=1e6)[0].topic == ""
    assert model.classify_texts(text, threshold=1e6, to_leaves=True)[0].topic == "Science/Math"


def test_indicator_keywords_restrict_a_topic_to_documents_containing_them():
    restricted = train_topic_model_from_texts(
        Featurizer(CFG), POSITIVES, NEGATIVES, settings=SETTINGS, indicators={"Science/Math": ["Kolmogorov"]}
    )
    verdicts = restricted.classify_texts(["theorem lemma proof algebra", "kolmogorov theorem lemma proof"])
    assert [v.topic for v in verdicts] == ["Science", "Science/Math"]


def test_round_trip_through_msgpack_is_exact(model):
    _assert_round_trip_is_exact(model)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(kind="linear_svm"), "not a topic model"),
        (lambda d: d.update(version=2), "version 2"),
        (lambda d: d["topics"].append("Zoo"), "one linear model per topic"),
        (lambda d: d["topics"].remove("Science"), "no parent topic"),
        (lambda d: d["spaces"].pop("Science"), "one feature space per inner node"),
        (lambda d: d["spaces"].update(Science=b"\x01\x00"), "little-endian int32"),
        (lambda d: d["settings"].update(threshold="high"), "settings.threshold"),
        (lambda d: d["indicators"].update(Music=["x"]), "indicators name topics"),
        (lambda d: d.pop("models"), "lacks field"),
        (lambda d: d["models"]["Arts"].update(bias=float("inf")), "bias"),
    ],
)
def test_malformed_topic_model_dicts_are_refused(model, mutate, message):
    data = msgpack.unpackb(msgpack.packb(model.to_dict()))
    mutate(data)
    with pytest.raises(ModelFormatError, match=message):
        TopicModel.from_dict(data)


def test_single_topic_without_negatives_asks_for_an_others_folder():
    with pytest.raises(TrainingDataError, match="OTHERS"):
        train_topic_model_from_texts(Featurizer(CFG), {"Math": POSITIVES["Science/Math"]}, settings=SETTINGS)


def test_only_child_inherits_its_parents_competitors():
    model = train_topic_model_from_texts(
        Featurizer(CFG),
        {"Science/Math": POSITIVES["Science/Math"], "Arts": POSITIVES["Arts"]},
        settings=SETTINGS,
    )
    assert model.models["Science/Math"].calibration.n_negative == 3
    assert model.classify_texts(["theorem lemma proof"])[0].topic == "Science/Math"


@pytest.mark.parametrize("confidence", ["mean", "platt"])
def test_only_child_of_a_folder_without_documents_takes_every_page_its_parent_takes(confidence):
    # "Science" holds only the folder "Math": the two are one topic, and a page that enters the one
    # enters the other, however weakly (a second classifier of the same documents in a narrower
    # feature space used to stop pages at "Science")
    settings = replace(SETTINGS, confidence=confidence, platt_folds=2)
    positives = {"Science/Math": POSITIVES["Science/Math"], "Arts": POSITIVES["Arts"]}
    model = train_topic_model_from_texts(Featurizer(CFG), positives, settings=settings)
    assert model.models["Science/Math"] == model.models["Science"]
    texts = [*POSITIVES["Science/Math"], "a lemma", "theorem about a painting", "football"]
    verdicts = model.classify_texts(texts)
    for verdict in verdicts:
        assert verdict.topic in {"", "Arts", "Science/Math"}
        if verdict.topic == "Science/Math":
            assert [t for t, _ in verdict.path] == ["Science", "Science/Math"]
    assert [v.topic for v in verdicts[:4]] == ["Science/Math"] * 4
    assert TopicModel.from_dict(msgpack.unpackb(msgpack.packb(model.to_dict()))) == model


def test_only_child_of_a_folder_with_documents_is_told_apart_from_them():
    general = ["physics chemistry biology laboratory experiment", "chemistry laboratory biology experiment"]
    positives = {"Science": general, "Science/Math": POSITIVES["Science/Math"], "Arts": POSITIVES["Arts"]}
    model = train_topic_model_from_texts(Featurizer(CFG), positives, settings=SETTINGS)
    # Math: its 4 positives against the parent's own 2 and the parent's competitors (Arts' 3)
    assert model.models["Science/Math"].calibration.n_negative == 5
    verdicts = model.classify_texts(["theorem lemma proof algebra", "biology laboratory experiment"])
    assert [v.topic for v in verdicts] == ["Science/Math", "Science"]


def test_idf_featurizer_is_fitted_and_stored_with_the_model():
    cfg = FeatureConfig(n_features=2**16, idf=True)
    model = train_topic_model_from_texts(Featurizer(cfg), POSITIVES, NEGATIVES, settings=SETTINGS)
    assert model.idf is not None
    assert TopicModel.from_dict(model.to_dict()) == model
    assert model.classify_texts(["theorem lemma proof algebra"])[0].topic == "Science/Math"


PLATT = TopicModelSettings(min_df=1, n_top=50, min_topic_features=2, confidence="platt", platt_folds=2)


def test_platt_confidence_is_a_calibrated_probability_that_round_trips_exactly():
    model = train_topic_model_from_texts(Featurizer(CFG), POSITIVES, NEGATIVES, settings=PLATT)
    assert set(model.scalers) == set(model.topics)
    assert all(s.a < 0 for s in model.scalers.values())  # higher SVM output, higher probability
    verdicts = model.classify_texts(["a lemma and a theorem with proof", "portrait in the gallery museum"])
    assert [v.topic for v in verdicts] == ["Science/Math", "Arts"]
    assert all(0 < conf <= 1 for v in verdicts for _, conf in v.path)
    _assert_round_trip_is_exact(model)


def test_scalers_must_match_the_confidence_setting(model):
    data = msgpack.unpackb(msgpack.packb(model.to_dict()))
    data["settings"]["confidence"] = "platt"
    with pytest.raises(ModelFormatError, match="Platt scalers"):
        TopicModel.from_dict(data)


def test_node_with_many_children_keeps_every_feature_of_its_documents():
    featurizer = Featurizer(CFG)
    few = replace(SETTINGS, n_top=1)
    mi_model = train_topic_model_from_texts(featurizer, POSITIVES, NEGATIVES, settings=few)
    full = replace(few, full_space_children=2)
    full_model = train_topic_model_from_texts(featurizer, POSITIVES, NEGATIVES, settings=full)
    all_texts = [t for docs in [*POSITIVES.values(), *NEGATIVES.values()] for t in docs]
    every_feature = np.unique(featurizer.transform(all_texts).indices)
    assert mi_model.spaces[""].size == 2  # one MI feature for each of Arts and Science
    assert np.array_equal(full_model.spaces[""], every_feature)


def test_settings_written_before_the_calibration_options_still_load(model):
    data = model.to_dict()
    for name in ("confidence", "platt_folds", "full_space_children"):
        data["settings"].pop(name)
    data.pop("scalers")
    assert TopicModel.from_dict(data) == model


def _assert_round_trip_is_exact(model: TopicModel) -> None:
    loaded = TopicModel.from_dict(msgpack.unpackb(msgpack.packb(model.to_dict())))
    assert loaded == model
    X = model.featurizer.transform(["theorem lemma proof", "gallery museum", "photon energy"])
    assert loaded.classify(X) == model.classify(X)
    for topic in model.topics:
        assert np.array_equal(loaded.confidences(X, topic), model.confidences(X, topic))


@pytest.mark.parametrize("confidence", ["raw", "platt"])
def test_child_with_subtopics_is_scored_by_the_best_of_its_leaves_routers(confidence):
    settings = replace(PLATT, confidence=confidence, route_by_leaves=True)
    model = train_topic_model_from_texts(Featurizer(CFG), POSITIVES, NEGATIVES, settings=settings)
    assert {kid: sorted(r) for kid, r in model.routers.items()} == {
        "Science": ["Science/Math", "Science/Physics"]
    }
    # each router separates its leaf's documents from all 4 + 3 + 3 + 2 + 2 documents at the root
    assert model.routers["Science"]["Science/Physics"].calibration.n_positive == 3
    assert model.routers["Science"]["Science/Physics"].calibration.n_negative == 11
    texts = ["a lemma and a theorem with proof", "the electron and photon energy", "museum gallery"]
    verdicts = model.classify_texts(texts)
    assert [v.topic for v in verdicts] == ["Science/Math", "Science/Physics", "Arts"]
    X = model.featurizer.transform(texts[:2])
    routed = [model.routers["Science"][t].decision_function(X) for t in model.routers["Science"]]
    if confidence == "platt":
        scalers = model.router_scalers["Science"]
        routed = [scalers[t].confidence(s) for t, s in zip(model.routers["Science"], routed, strict=True)]
    assert [v.path[0][1] for v in verdicts[:2]] == pytest.approx(np.max(routed, axis=0).tolist())
    _assert_round_trip_is_exact(model)


def test_balanced_classes_let_a_topic_of_few_bookmarks_take_a_page_holding_a_few_of_its_words():
    arts = [
        "painting sculptor museum gallery canvas",
        "museum gallery portrait painting exhibition",
        "sculptor canvas exhibition portrait museum",
        "gallery painting canvas museum portrait",
        "exhibition sculptor portrait gallery",
        "canvas painting museum sculptor",
    ]
    football = [
        "football match goal league team",
        "team league season football coach",
        "goal coach match team",
        "league football season goal",
        "coach team match league",
    ]
    positives = {
        "Math": ["theorem proof algebra lemma integral", "matrix equation integral theorem"],
        "Arts": arts,
    }
    texts = ["an integral and a lemma", "algebra of a matrix", "theorem of the museum", "football theorem"]
    verdicts = {}
    for balanced in (False, True):
        settings = replace(SETTINGS, balanced=balanced)
        model = train_topic_model_from_texts(Featurizer(CFG), positives, {"": football}, settings=settings)
        verdicts[balanced] = [v.topic for v in model.classify_texts(texts)]
        assert TopicModel.from_dict(msgpack.unpackb(msgpack.packb(model.to_dict()))) == model
    # two bookmarks against eleven documents of the others: weighed as they come, only a page much like
    # the bookmarks gets in
    assert verdicts[False] == ["Math", "", "", ""]
    assert verdicts[True] == ["Math", "Math", "", ""]


def test_settings_stored_before_balanced_classes_existed_read_as_unbalanced(model):
    data = msgpack.unpackb(msgpack.packb(model.to_dict()))
    del data["settings"]["balanced"]
    assert TopicModel.from_dict(data).settings.balanced is False
