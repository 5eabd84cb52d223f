"""Filtering a topic again scores its documents only with the meta-classifiers that changed since."""

from __future__ import annotations

import pytest

from metamodels.meta_classifier import MetaClassifier
from metamodels.meta_functions import ABSTAIN, ACCEPT, REJECT
from metamodels.restrictive import loss_targeted_decisions
from node.cooperation import filtering, latent_meta
from node.cooperation.testing import running_nodes

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@pytest.mark.trio
async def test_filtering_a_topic_again_scores_it_with_the_changed_meta_classifiers_only(
    tmp_path, monkeypatch
):
    """Databases and Mathematics are rivals: a new meta-classifier of Mathematics filters Databases again,
    and of the two meta-classifiers that filtering reads only the new one has to score Databases' documents
    (at 150 topics a new top-level topic's filtered 110 topics again, each with all its rivals). The
    verdicts are those of scoring with both."""
    async with running_nodes(tmp_path, 1, start=False) as (a,):
        await a.exchange.refresh_local_models(now=True)
        for topic in ("Databases", "Mathematics"):
            await a.meta_protocol.build(topic, loss=0.2)
        scored = []
        score = latent_meta.meta_scores

        def spy(meta, X):
            scored.append(next((t for t, m in a._metas.items() if m is meta), "(being built)"))
            return score(meta, X)

        monkeypatch.setattr(latent_meta, "meta_scores", spy)
        monkeypatch.setattr(filtering, "meta_scores", spy)

        await a.work(a._apply, "Databases", 0.2)
        assert scored == []  # nothing changed
        # a new meta-classifier of Mathematics (a rebuild makes a new object), not yet filtered with
        a._metas["Mathematics"] = MetaClassifier.from_dict(a._metas["Mathematics"].to_dict())
        again = await a.work(a._apply, "Databases", 0.2)
        assert scored == ["Mathematics"]

        docs = await a.db(filtering.topic_documents, "Databases")
        X = a.featurizer.transform(list(docs.texts))
        full = filtering.filtering_scores(a._filtering_metas("Databases"), "Databases", X)
        verdicts = await a.db(filtering.verdict_counts, "Databases")
        decisions = loss_targeted_decisions(full, 0.2)
        assert again == {
            "kept": int((decisions == ACCEPT).sum()),
            "rejected": int((decisions == REJECT).sum()),
            "abstained": int((decisions == ABSTAIN).sum()),
        }
        assert {k: verdicts[k] for k in again} == again
