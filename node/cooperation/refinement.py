"""Collaborative clustering (thesis 3.3.3): peers exchange k-means centroids of a shared topic, each builds
restrictive meta clusters on its own documents, and a proposal becomes a subtopic when the user accepts it."""

from __future__ import annotations

import logging
import shlex
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from crawler.preview import without_repeated_lines
from crawler.repository import MAX_ROW_ID, Repository
from crawler.taxonomy import (
    FETCHED,
    OTHERS,
    POSITIVE,
    REFINED,
    TOPICS_LISTED_API,
    TrainingDocument,
    store_subtopic,
    subtopic_name,
    unknown_topic,
)
from metamodels.clustering import ClusteringModel, kmeans, restrict, top_terms
from metamodels.features import Featurizer, tokenize
from metamodels.meta_clustering import apply_models, consensus
from metamodels.meta_functions import ABSTAIN_LABEL
from node.cooperation import filtering, store
from node.cooperation.part import LayerPart
from node.cooperation.settings import MAX_CLUSTERS
from node.cooperation.wiremodels import centroids_from_payload, centroids_payload
from node.errors import shown
from node.wording import counted
from p2p.errors import P2PError
from p2p.messages.models import SignedModel
from p2p.signing import sign_model

log = logging.getLogger(__name__)

MAX_SUBTOPIC_NAME = 80
"""The longest name an accepted proposal's subtopic may take (it is part of every key under it)."""

SUBTOPIC_EXAMPLES = 25
"""Positive training documents an accepted subtopic gets from its cluster: its most confident members, as
many as the focus loop takes of a topic with sparse bookmarks at its phase switch (`focus.n_conf`)."""


class Refinement(LayerPart):
    """The clustering half of one node's cooperation layer (`Cooperation.refinement`)."""

    def _topic_matrix(self, topic: str) -> tuple[filtering.TopicDocuments, Any]:
        """The node's own documents filed in the topic itself, for its proposals and for the centroids it
        sends peers alike: an accepted subtopic's documents have left the topic (a refinement of the
        subtree proposed an accepted subtopic again, its very documents)."""
        docs = filtering.topic_documents(self.layer.repo, topic, include_pooled=False, subtopics=False)
        return docs, self.layer.featurizer.transform(list(docs.texts))

    def _local_centroids(self, topic: str, k: int) -> Any:
        docs, X = self._topic_matrix(topic)
        if docs.doc_ids.size < 2 * k:
            return None
        return local_centroids(X, k, self.layer.featurizer)

    async def on_centroids(self, peer: str, topic: str, k: int) -> SignedModel | None:
        """A k-means model of the topic on this node's documents (k checked by the protocol)."""
        model = await self.layer.work(self._local_centroids, topic, k)
        if model is None:
            return None
        return sign_model(self.layer.key, centroids_payload(model, topic, k, self.layer.peer_id))

    async def refine(self, topic: str, k: int | None = None) -> list[dict[str, Any]]:
        """Peers' centroids of the topic, meta clusters of own documents: the proposals, stored."""
        layer = self.layer
        k = k or self.settings.cluster_k
        if not 2 <= k <= MAX_CLUSTERS:
            raise ValueError(f"k must lie in [2, {MAX_CLUSTERS}]")
        known = await layer.topics()
        if topic not in known:
            raise KeyError(unknown_topic(topic, known, listed=TOPICS_LISTED_API))
        models = []
        for peer in layer.community(topic):
            try:
                reply = await layer.protocols.fetch_centroids(peer, topic, k)
            except P2PError as exc:
                log.info("centroids: %s", exc)
                continue
            signed = layer.exchange.checked_model(peer, reply, topic, "centroids", max_rows=k)
            if signed is not None:
                await layer.db(store.save_model, signed, store.RECEIVED)
                models.append(centroids_from_payload(signed.payload))

        def propose() -> list[dict[str, Any]]:
            docs, X = self._topic_matrix(topic)
            if docs.doc_ids.size < 2 * k:
                raise ValueError(
                    f"topic {topic!r} has {counted(int(docs.doc_ids.size), 'document')} of its own "
                    f"(its subtopics' aside): too few for {k} subtopics"
                )
            own = local_centroids(X, k, layer.featurizer)
            proposals = cluster_proposals(
                docs, X, [own, *models], k, self.settings.cluster_loss, layer.featurizer
            )
            return store.save_proposals(layer.repo, topic, proposals)

        saved = await layer.work(propose)
        layer.publish("refine", {"topic": topic, "proposals": len(saved), "peers": len(models)})
        return [public_proposal(p) for p in saved]

    async def proposals(self, topic: str | None = None) -> list[dict[str, Any]]:
        return [public_proposal(p) for p in await self.layer.db(store.load_proposals, topic)]

    async def accept_proposal(self, proposal_id: int | str, name: str | None = None) -> dict[str, Any]:
        """The proposal becomes subtopic TOPIC/NAME: its documents move there, its most confident ones
        become the subtopic's training documents (`subtopic_examples`), and the node's models learn it: the
        crawl's topic model at once, the subtopic's own model and meta-classifier in the cooperation round
        this starts (a meta build trains the model itself when it comes first)."""
        proposal = await self._open_proposal(proposal_id)
        # unnamed: after its top terms as its label now says them (one stored earlier has them with commas)
        name = name or subtopic_name(proposal["top_terms"], proposal["label"])
        label = " ".join(name.replace("/", " ").split())
        if not label:
            raise ValueError("a subtopic needs a non-empty name")
        if label.lower() == OTHERS:  # a taxonomy's folder of negative examples, in any case
            raise ValueError(f"{label!r} names a topic's negative examples: give the subtopic another name")
        if len(label) > MAX_SUBTOPIC_NAME:
            raise ValueError(f"a subtopic's name is at most {MAX_SUBTOPIC_NAME} characters")
        key = f"{proposal['topic']}/{label}"

        def accept(repo: Repository) -> int:
            examples = subtopic_examples(repo, key, proposal["doc_ids"])
            store_subtopic(repo, key, label, proposal["doc_ids"], examples)
            store.set_proposal_status(repo, int(proposal["id"]), "accepted", label)
            return positive_examples(repo, key)

        examples = await self.layer.db(accept)
        self.layer.publish("refine", {"topic": proposal["topic"], "accepted": key})
        await self.layer.topics_changed([key])
        await self._refocus_crawl()
        answer = await self._stored(int(proposal["id"]))
        return {**answer, **subtopic_answer(key, examples, self.settings.min_training_docs)}

    async def _refocus_crawl(self) -> None:
        """The crawl's topic model trained again on the taxonomy with the new subtopic, as after an import:
        the focus loop holds the taxonomy it was trained on, and filed no page in the subtopic before."""
        service = self.layer.service
        if getattr(service, "crawler", None) is not None and hasattr(service, "topics"):
            await service.topics.refresh_focus()

    async def reject_proposal(self, proposal_id: int | str, name: str | None = None) -> dict[str, Any]:
        proposal = await self._open_proposal(proposal_id)
        await self.layer.db(store.set_proposal_status, int(proposal["id"]), "rejected")
        return await self._stored(int(proposal["id"]))

    async def _stored(self, number: int) -> dict[str, Any]:
        return public_proposal((await self.layer.db(store.load_proposals, None, number))[0])

    async def _open_proposal(self, proposal_id: int | str) -> dict[str, Any]:
        try:
            number = int(proposal_id)
        except ValueError:
            number = -1
        found = await self.layer.db(store.load_proposals, None, number) if 0 <= number <= MAX_ROW_ID else []
        if not found:
            raise KeyError(
                f"no proposal {shown(proposal_id)}: `topicswarm refine TOPIC` lists ones (GET /api/refine)"
            )
        if found[0]["status"] != "open":
            raise ValueError(f"proposal {number} is already {found[0]['status']}")
        return found[0]


def public_proposal(row: dict[str, Any]) -> dict[str, Any]:
    """A stored proposal as the API shows it (its document ids stay in the repository)."""
    return {
        k: row[k]
        for k in ("id", "topic", "label", "top_terms", "sample_titles", "size", "abstained", "status")
    }


def subtopic_examples(repo: Repository, key: str, doc_ids: Sequence[int]) -> list[TrainingDocument]:
    """Positive training documents of an accepted subtopic: the first `SUBTOPIC_EXAMPLES` pages of its
    cluster, most confident first (as `cluster_proposals` stores them), that have text and are no training
    document yet (a page that is one already keeps its label: the first one counts, `training.training_rows`).
    Without them the subtopic had no model, and neither the crawl nor a meta-classifier could learn it."""
    taken = {url for (url,) in repo.db.execute("SELECT url FROM training_documents WHERE url != ''")}
    examples: list[TrainingDocument] = []
    for doc_id in doc_ids:
        if len(examples) >= SUBTOPIC_EXAMPLES:
            break
        row = repo.db.execute("SELECT url, title, text FROM documents WHERE id = ?", [int(doc_id)]).fetchone()
        if row is None or not row[0] or row[0] in taken or not (row[2] or "").strip():
            continue
        taken.add(row[0])
        examples.append(
            TrainingDocument(
                key, POSITIVE, url=row[0], title=row[1] or "", text=row[2], status=FETCHED, source=REFINED
            )
        )
    return examples


def positive_examples(repo: Repository, key: str) -> int:
    """The topic's own positive training documents with text (its subtopics' aside)."""
    query = "SELECT count(*) FROM training_documents WHERE topic = ? AND polarity = ? AND text != ''"
    return int(repo.db.execute(query, [key, POSITIVE]).fetchone()[0])


def subtopic_answer(key: str, examples: int, needed: int) -> dict[str, Any]:
    """What accepting a proposal made, beside the proposal: the subtopic's key, how many training documents
    it has, and what happens next (a subtopic nobody else has is modelled by this node alone)."""
    if examples >= needed:
        build = f"`topicswarm meta build --topic {shlex.quote(key)}`"
        learns = (
            f"{counted(examples, 'training document')} (its cluster's most confident pages) train its model: "
            "the crawl files pages in it from now on, and its meta-classifier (this node's model alone while "
            f"no peer has the subtopic) is built within a cooperation round, or at once by {build}"
        )
    else:
        learns = (
            f"it has {counted(examples, 'training document')} with text and its model needs {needed}: "
            "mark pages of it relevant (`topicswarm feedback DOC relevant`) to train one"
        )
    return {"subtopic": key, "training_documents": examples, "learns": learns}


# -- collaborative clustering (3.3.3) ---------------------------------------------------------------------
def local_centroids(X: sp.csr_matrix, k: int, featurizer: Featurizer, seed: int = 0) -> ClusteringModel:
    return kmeans(X, k, featurizer.config, seed=seed).model


def cluster_proposals(
    docs: filtering.TopicDocuments,
    X: sp.csr_matrix,
    models: Sequence[ClusteringModel],
    k: int,
    loss: float,
    featurizer: Featurizer,
) -> list[dict[str, object]]:
    """Meta clusters of the node's own documents from its own and its peers' centroid models: labels mapped
    onto each other (the similarity or the purity mapping, whichever agrees more with the models:
    `consensus`), combined by a confidence vote, the least confident `loss` share left unassigned. Terms are
    shown as the words the documents use, not as stems, and come from the documents' own lines: lines that
    several of them share (a site's menus, slogans, language lists) labelled a cluster of one site's pages
    "choose, download, fast" from SQLite's "Small. Fast. Reliable. Choose any three." and its menu."""
    usable = [m for m in models if m.k == k]
    labels, confidences = apply_models(usable, X)
    voted = consensus(labels, confidences, k).clustering
    kept = restrict(voted, loss)
    texts = without_repeated_lines(docs.texts)
    words = surface_forms(texts, featurizer)
    stems = top_terms([featurizer.terms(t) for t in texts], kept.labels, k, 10)
    terms = [[words.get(stem, stem) for stem in cluster_terms] for cluster_terms in stems]
    proposals = []
    for cluster in range(k):
        members = np.flatnonzero(kept.labels == cluster)
        if members.size == 0:
            continue
        best = members[np.argsort(-voted.confidence[members], kind="stable")]
        abstained = int(np.sum((voted.labels == cluster) & (kept.labels == ABSTAIN_LABEL)))
        proposals.append(
            {
                "label": subtopic_name(terms[cluster], f"cluster {cluster + 1}"),
                "top_terms": list(terms[cluster]),
                "sample_titles": [docs.titles[i] for i in best[:5]],
                "size": int(members.size),
                "abstained": abstained,
                "doc_ids": [int(docs.doc_ids[i]) for i in best],  # most confident first: examples
            }
        )
    return proposals


def surface_forms(texts: Sequence[str], featurizer: Featurizer) -> dict[str, str]:
    """Each stem's most frequent word in `texts` ('tutorial' for 'tutori'): labels a person can read."""
    seen: dict[str, Counter[str]] = defaultdict(Counter)
    for text in texts:
        for token in tokenize(text):
            stems = featurizer.terms(token)
            if stems:
                seen[stems[0]][token] += 1
    return {stem: words.most_common(1)[0][0] for stem, words in seen.items()}
