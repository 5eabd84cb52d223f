from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from metamodels import features
from metamodels.errors import FeatureSpaceMismatch, ModelFormatError
from metamodels.features import FeatureConfig, Featurizer, IdfWeights, check_feature_space, tokenize


def test_tokenize_lowercases_and_keeps_words_starting_with_a_letter():
    assert tokenize("The X11 server, 2nd try: foo_bar café!") == [
        "the",
        "x11",
        "server",
        "try",
        "foo",
        "bar",
        "café",
    ]


def test_terms_drop_stopwords_and_stem_with_snowball():
    fz = Featurizer(FeatureConfig())
    assert fz.terms("The running dogs were generalizing about it") == ["run", "dog", "general"]


def test_terms_without_stemming_or_stopwords_are_plain_tokens():
    fz = Featurizer(FeatureConfig(language="", stopwords=False))
    assert fz.terms("The running dogs") == ["the", "running", "dogs"]


def test_terms_respect_token_length_limits():
    fz = Featurizer(FeatureConfig(min_token_length=3, max_token_length=6))
    assert fz.terms("ox cat elephant horses") == ["cat", "hors"]


def test_feature_index_is_the_same_in_another_process():
    fz = Featurizer(FeatureConfig(n_features=2**20))
    here = [fz.feature_of(term) for term in ("orbit", "shuttl", "café")]
    code = (
        "from metamodels.features import Featurizer, FeatureConfig;"
        "fz = Featurizer(FeatureConfig(n_features=2**20));"
        "print([fz.feature_of(t) for t in ('orbit', 'shuttl', 'café')])"
    )
    env_hash_seed = os.environ | {"PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env_hash_seed
    ).stdout
    assert out.strip() == repr(here)


def test_known_murmurhash_value_fixes_the_hash_function():
    # MurmurHash3_x86_32("abc", seed 0) = 0xB3DD93FA, i.e. -1277324294 as a signed int32.
    fz = Featurizer(FeatureConfig(n_features=1000, language="", stopwords=False))
    assert fz.feature_of("abc") == (1277324294 % 1000, -1.0)


def test_transform_rows_are_unit_length_and_empty_text_gives_zero_row():
    fz = Featurizer(FeatureConfig(n_features=2**12))
    X = fz.transform(["orbit orbit shuttle", "", "the and of"])
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    assert norms == pytest.approx([1.0, 0.0, 0.0])


@pytest.mark.parametrize(("tf", "expected_ratio"), [("raw", 3.0), ("log", 1 + np.log(3)), ("binary", 1.0)])
def test_tf_scaling_sets_the_ratio_between_repeated_and_single_terms(tf, expected_ratio):
    fz = Featurizer(FeatureConfig(n_features=2**16, tf=tf))
    X = fz.transform(["orbit orbit orbit shuttle"]).toarray()[0]
    orbit, _ = fz.feature_of("orbit")
    shuttle, _ = fz.feature_of("shuttl")
    assert abs(X[orbit]) / abs(X[shuttle]) == pytest.approx(expected_ratio)


def test_signed_hash_gives_each_term_its_sign():
    fz = Featurizer(FeatureConfig(n_features=2**16))
    X = fz.transform(["orbit"]).toarray()[0]
    index, sign = fz.feature_of("orbit")
    assert X[index] == sign


def test_idf_downweights_terms_found_in_every_document():
    cfg = FeatureConfig(n_features=2**16, idf=True, tf="raw")
    fz = Featurizer(cfg).fit_idf(["orbit moon", "orbit shuttle", "orbit rocket"])
    row = fz.transform(["orbit moon"]).toarray()[0]
    assert abs(row[fz.feature_of("orbit")[0]]) < abs(row[fz.feature_of("moon")[0]])
    loaded = IdfWeights.from_dict(fz.idf.to_dict())
    assert np.array_equal(loaded.weights(cfg.n_features), fz.idf.weights(cfg.n_features))


def test_idf_config_without_fitted_weights_is_refused():
    with pytest.raises(FeatureSpaceMismatch, match="fit_idf"):
        Featurizer(FeatureConfig(idf=True)).transform(["x"])


def test_feature_config_round_trips_through_plain_dict():
    cfg = FeatureConfig(n_features=2**10, language="german", stopwords=False, tf="raw")
    assert FeatureConfig.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tf": "sqrt"}, "tf must be one of"),
        ({"language": "klingon"}, "no Snowball stemmer"),
        ({"n_features": "many"}, "must be int"),
        ({"stopwords": 1}, "must be bool"),
        ({"version": 99}, "version 99"),
        ({"colour": "red"}, "unknown FeatureConfig fields"),
    ],
)
def test_malformed_feature_config_dicts_are_refused(change, message):
    data = FeatureConfig().to_dict() | change
    with pytest.raises(ModelFormatError, match=message):
        FeatureConfig.from_dict(data)


def test_matrix_of_another_width_is_refused():
    fz = Featurizer(FeatureConfig(n_features=2**10))
    with pytest.raises(FeatureSpaceMismatch):
        check_feature_space(FeatureConfig(n_features=2**12), fz.transform(["orbit"]))


def test_indicator_words_map_to_their_stemmed_feature_indices():
    fz = Featurizer(FeatureConfig(n_features=2**16))
    assert fz.indices_of_words(["Kolmogorov", "tests", "the"]) == sorted(
        {fz.feature_of("kolmogorov")[0], fz.feature_of("test")[0]}
    )


TEXTS = [
    "PostgreSQL indexes speed up queries on large tables",
    "Apache virtual hosts share one server between names",
    "",
    "Octave solves linear systems of equations, equations and more equations",
]


def _uncached(texts, monkeypatch, **config):
    monkeypatch.setattr(features, "ROW_CACHE_ENTRIES", 0)
    monkeypatch.setattr(features, "_ROW_CACHES", {})
    return Featurizer(FeatureConfig(**config)).transform(texts)


def _same(a, b):
    return (
        a.shape == b.shape
        and np.array_equal(a.indptr, b.indptr)
        and np.array_equal(a.indices, b.indices)
        and np.array_equal(a.data, b.data)
    )


def test_rows_from_the_cache_equal_rows_counted_afresh(monkeypatch):
    monkeypatch.setattr(features, "_ROW_CACHES", {})
    fz = Featurizer(FeatureConfig())
    first = fz.transform(TEXTS)
    again = fz.transform(TEXTS[::-1])  # every row a hit now, in another order
    assert len(fz._rows) == len(TEXTS)
    assert _same(again, first[::-1])
    assert _same(first, _uncached(TEXTS, monkeypatch))


def test_a_callers_matrix_is_its_own_copy(monkeypatch):
    monkeypatch.setattr(features, "_ROW_CACHES", {})
    fz = Featurizer(FeatureConfig())
    first = fz.transform(TEXTS)
    first.data[:] = 0.0
    assert _same(fz.transform(TEXTS), _uncached(TEXTS, monkeypatch))


def test_feature_spaces_and_tf_scalings_keep_rows_of_their_own(monkeypatch):
    monkeypatch.setattr(features, "_ROW_CACHES", {})
    text = ["equations equations equations linear"]
    log = Featurizer(FeatureConfig(tf="log")).transform(text)
    binary = Featurizer(FeatureConfig(tf="binary")).transform(text)
    narrow = Featurizer(FeatureConfig(n_features=2**10)).transform(text)
    assert not np.array_equal(log.data, binary.data)
    assert narrow.shape[1] == 2**10 and log.shape[1] == 2**18


def test_the_least_recently_used_rows_go_first_beyond_the_limit(monkeypatch):
    monkeypatch.setattr(features, "_ROW_CACHES", {})
    fz = Featurizer(FeatureConfig())
    sizes = [fz.transform([text]).nnz for text in TEXTS]
    monkeypatch.setattr(features, "ROW_CACHE_ENTRIES", sizes[0] + sizes[1] + sizes[3])
    fz.transform([TEXTS[0]])  # used again: the second text is now the oldest
    fz.transform(["Debian packages install with apt and dpkg"])
    kept = fz._rows
    assert kept.get(features.text_digest(TEXTS[0])) is not None
    assert kept.get(features.text_digest(TEXTS[1])) is None
    assert kept.entries <= features.ROW_CACHE_ENTRIES
