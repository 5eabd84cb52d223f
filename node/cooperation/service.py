"""`Cooperation`: the semantic layer of thesis 3.3 for one running node.

The network is the p2p layer's `p2p.service.P2PService`: it owns membership (thesis 3.3.1 push-pull), the
topic communities (gossip announcements of topic keys and model versions) and the framed request/response
protocols with their guards; this layer plugs its providers and handlers into them. Each round (every
`sync_interval` seconds, or at once after a topics import) the node:
- retrains the local model of every topic whose training documents changed, announces the new version and
  fetches the models of community peers it holds none of (`exchange.ModelExchange`, the layer's `exchange`);
- rebuilds the topic's meta-classifier from everything it holds when a model arrived or its own crawl grew
  by half (`REBUILD_GROWTH`), and gives the new documents their restrictive verdicts (here);
- asks the community to cross-validate models that changed (`meta_protocol.MetaProtocol`, the layer's
  `meta_protocol`, which also runs the distributed meta-classifier protocol of figures 3.5/3.6 when the user
  builds one);
- syncs the peers' crawl results of shared topics into its repository as pooled documents
  (`results.ResultSync`, the layer's `results`).
Collaborative clustering is `refinement.Refinement`, the layer's `refinement`.

A model's weight comes from its accuracy on this node's held-out labelled documents when there are enough of
them, else as the community measured it (3.15): the lower median over the distinct peers that cross-validated
it on their own data (its training documents excluded) and this node's own measurement, so one lying reporter
cannot lift a hostile model; a model this node measured at or below chance, or whose scores run against this
node's labels, has no say at all.

Traffic (each byte counts against the crawl's): no model is trained while the crawler's learning phase
fetches (the phase ends by adding archetypes, which would make that model obsolete within a minute), a
retrained model is published only when it decides differently from the published one
(`republish_agreement`), models ship pruned (`prune_agreement`) with their training documents as short keys,
and a peer is offered only the results the restrictive filter keeps (`share_kept_only`), never its own
(`results`).
"""

from __future__ import annotations

import contextvars
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import trio

from crawler.errors import RepositoryError
from crawler.repository import Repository
from metamodels.errors import MetamodelError
from metamodels.features import FeatureConfig, Featurizer
from metamodels.memo import digest
from metamodels.meta_classifier import MetaClassifier
from metamodels.restrictive import loss_targeted_decisions
from node.cooperation import filtering, latent_meta, store, training, weighing
from node.cooperation.exchange import ModelExchange
from node.cooperation.focus import MetaFocus
from node.cooperation.meta_protocol import MetaProtocol
from node.cooperation.refinement import Refinement
from node.cooperation.results import ResultSync
from node.cooperation.settings import CooperationSettings
from node.cooperation.wiremodels import linear_from_payload
from node.stored_state import topic_keys
from p2p.errors import P2PError
from p2p.messages.results import ResultSyncRequest
from p2p.protocols import RESULTS

log = logging.getLogger(__name__)

_IN_ROUND: contextvars.ContextVar[bool] = contextvars.ContextVar("in_cooperation_round", default=False)
"""Set in the task that runs the cooperation rounds (and so in the tasks it starts): its work yields to a
user's request (`Cooperation.user_first`)."""

REBUILD_GROWTH = 1.5
"""A topic's meta-classifier is rebuilt when the node's own documents grew by this factor since it was built:
its latent class models are fitted on those documents, and a growing crawl is rebuilt for a logarithmic
number of times. (Rebuilt every round instead, an idle node spent 7% of a core on it.)"""


class Cooperation:
    """The cooperation layer of one node: `await nursery.start(coop.run)`, then the public methods."""

    def __init__(
        self,
        repository: Path | str,
        network: Any,
        settings: CooperationSettings | None = None,
        *,
        service: Any = None,
        feature_config: FeatureConfig | None = None,
    ) -> None:
        self.settings = settings or CooperationSettings()
        self.repo = Repository(repository)
        store.ensure_schema(self.repo)
        self.network = network  # p2p.service.P2PService
        self.protocols = network.protocols
        self.key = network.key
        self.ledger = self.protocols.guard.ledger
        self.service = service
        self.featurizer = Featurizer(feature_config or FeatureConfig())
        self.features = training.FeatureCache(self.featurizer)
        self.stale: set[str] = set()  # topics whose meta-classifier waits for a rebuild
        self._built_on: dict[str, int] = {}  # topic -> the node's own documents when its meta was built
        self._db_limiter = trio.CapacityLimiter(1)
        self._users_waiting = 0  # user requests under way that the rounds' work lets pass (`user_first`)
        self._users_done = trio.Event()
        self._metas: dict[str, MetaClassifier] = {}
        # topic -> (the meta-classifiers it read: its own and its rivals', loss, |score| cut-off) of the
        # last full restrictive filtering
        self._cutoffs: dict[str, tuple[dict[str, MetaClassifier], float, float]] = {}
        # topic -> (a digest of its documents' features at the last full filtering, meta-classifier topic ->
        # (that meta-classifier, its scores of them)): filtering a topic again scores with the changed ones
        # only. A digest, not the features: a topic's subtree can hold most of a large repository.
        self._scored: dict[str, tuple[bytes, dict[str, tuple[MetaClassifier, np.ndarray]]]] = {}
        self._poke = trio.Event()
        self._closed = False
        self.rounds = 0
        self.exchange = ModelExchange(self)
        self.meta_protocol = MetaProtocol(self)
        self.results = ResultSync(self)
        self.refinement = Refinement(self)

    @classmethod
    def for_node(cls, service: Any) -> Cooperation:
        """Built by `node.service.NodeService` once its network runs."""
        settings = getattr(service.config, "cooperation", None) or CooperationSettings()
        return cls(service.data.repository, service.network, settings, service=service)

    @property
    def peer_id(self) -> str:
        return self.network.peer_id

    async def db(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await self.work(lambda: fn(self.repo, *args, **kwargs))

    async def work(self, fn: Any, *args: Any) -> Any:
        """Run `fn(*args)` in a worker thread; one at a time, since they share one SQLite connection."""
        if _IN_ROUND.get():
            while self._users_waiting:
                await self._users_done.wait()
        if self._closed:
            raise P2PError("the cooperation layer has stopped")
        return await trio.to_thread.run_sync(fn, *args, limiter=self._db_limiter)

    @asynccontextmanager
    async def user_first(self) -> AsyncIterator[None]:
        """While a user's request runs, a cooperation round starts no work in the worker (the round waits
        before its next step, not in the middle of one). The worker runs one step at a time, so each of a
        meta build's eight steps queued behind a round's: after the models of 150 topics arrived, the
        round rebuilt every topic's meta-classifier, 0.47 s each (median), and a build of one topic took
        3.2 s, 0.19 s of them its own work (`python -m simnet.bench.many_topics`)."""
        if not self._users_waiting:
            self._users_done = trio.Event()
        self._users_waiting += 1
        try:
            yield
        finally:
            self._users_waiting -= 1
            if not self._users_waiting:
                self._users_done.set()

    def close(self) -> None:
        self.repo.close()

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the protocols and cooperate in rounds until cancelled."""
        self.network.set_model_provider(self.exchange.serve)
        self.protocols.serve(RESULTS, ResultSyncRequest, self.results.answer)
        self.network.set_model_filter(self.exchange.wants)
        self.network.on_model(self.exchange.on_announced)
        self.protocols.serve_meta(self.meta_protocol.answer)
        self.protocols.serve_centroids(self.refinement.on_centroids)
        await self._load_metas()
        # a peer blocked while the node ran offline: its models leave the meta-classifiers at the first round
        self.stale.update(await self.db(store.metas_weighing, self.ledger.is_blocked))
        await self.exchange.load_held()
        await self.exchange.announce()
        task_status.started(self)
        _IN_ROUND.set(True)  # this task's work (and its children's) lets a user's request pass
        try:
            while True:
                try:
                    await self.round()
                except (MetamodelError, P2PError, OSError, sqlite3.Error, RepositoryError) as exc:
                    # a busy repository (the crawler writes constantly) or a full disk costs one round, not
                    # the layer
                    log.warning("cooperation round failed: %s", exc)
                with trio.move_on_after(self.settings.sync_interval):
                    await self._poke.wait()
                self._poke = trio.Event()
        finally:
            # the p2p service may outlive this layer: close the connection only when no worker uses it
            with trio.CancelScope(shield=True):
                async with self._db_limiter:
                    self._closed = True
                    self.close()

    async def topics_changed(self, keys: Sequence[str] = ()) -> None:
        """After a topics import: retrain and announce at once."""
        self._poke.set()

    async def round(self) -> None:
        """One cooperation round (see the module docstring)."""
        await self.exchange.refresh_local_models()
        await self.exchange.announce()
        await self.exchange.fetch_models()
        self.stale.update(await self.db(self._outgrown))
        await self.rebuild_stale()
        await self.meta_protocol.gather_reports()
        await self.judge_new_documents()
        await self.results.sync()
        await self.install_focus()
        self.rounds += 1

    async def install_focus(self) -> bool:
        """Let the node's focus loop classify with the meta-classifiers (and prioritise links by them)."""
        crawler = getattr(self.service, "crawler", None)
        policy = getattr(crawler, "policy", None)
        if policy is None or isinstance(policy, MetaFocus) or not hasattr(policy, "taxonomy"):
            return False
        async with await self.service.hold_crawl():
            crawler.policy = MetaFocus(policy, self.meta_confidence)
        return True

    # -- topics and their labelled documents ---------------------------------------------------------------
    async def topics(self) -> list[str]:
        return await self.db(topic_keys)

    def labelled(self, topic: str) -> training.LabelledData:
        """The topic's labelled documents, featurized (in a worker thread: it reads the repository)."""
        return self.features.labelled(self.repo, topic)

    def own_documents(self) -> Any:
        """The node's newest own documents, featurized (in a worker thread)."""
        return self.features.own(self.repo)

    # -- membership and communities (the p2p layer's) ----------------------------------------------------
    def connected_peers(self) -> list[str]:
        """Peers connected now; a blocked peer that dialled in is not one (its connection is dropped)."""
        peers = {str(p) for p in self.network.connected()} - {self.peer_id}
        return sorted(p for p in peers if not self.ledger.is_blocked(p))

    def known_peers(self) -> list[str]:
        """Connected peers and those in the membership's neighbour list (thesis 3.3.1)."""
        return sorted(set(self.connected_peers()) | set(self.network.membership.peer_ids()))

    def community(self, topic: str) -> list[str]:
        """Peers that hold the topic key (its gossip subscribers and announcers), banned ones left out."""
        return [p for p in self.network.communities.community(topic) if not self.banned(p)]

    def banned(self, peer: str) -> bool:
        return self.ledger.is_banned(peer)

    # -- meta-classifier ----------------------------------------------------------------------------------
    def members(
        self,
        topic: str,
        origins: Sequence[str] | None = None,
        data: training.LabelledData | None = None,
    ) -> list[weighing.Member]:
        """The local model and the received ones (all, or those of `origins`), weighed on local data (the
        topic's labelled documents, read here unless the caller has them)."""
        data = data if data is not None else self.labelled(topic)
        reports = self.meta_protocol.reports.get(topic, {})
        members = []
        for stored in store.load_models(self.repo, topic, "linear"):
            model = linear_from_payload(stored.model.payload)
            if stored.role == store.LOCAL:
                votes = reports.get((self.peer_id, stored.version))
                members.insert(0, weighing.local_member(self.peer_id, stored.version, model, data, votes))
            elif origins is None or stored.origin in origins:
                votes = reports.get((stored.origin, stored.version))
                members.append(weighing.received_member(stored.origin, stored.version, model, data, votes))
        for m in members:
            store.set_model_quality(
                self.repo,
                topic,
                m.origin,
                "linear",
                m.accuracy,
                m.evaluated,
                m.weight,
                community=m.community_accuracy,
                reporters=m.reporters,
            )
        return members

    def combine(self, topic: str, origins: Sequence[str] | None, loss: float | None) -> dict[str, Any] | None:
        """Meta-classifier of the topic from the held models; stored, applied to the topic's documents."""
        data = self.labelled(topic)
        members = self.members(topic, origins, data)
        if not members:
            return None
        previous = store.load_meta(self.repo, topic)
        loss = loss if loss is not None else previous["loss"] if previous else self.settings.default_loss
        self._built_on[topic] = training.own_document_count(self.repo)
        unlabelled = self.own_documents()
        claimed = filtering.rival_claims(self._metas, topic, unlabelled)
        meta = latent_meta.meta_classifier(members, unlabelled, data, loss, claimed)
        scores = latent_meta.meta_scores(meta, data.X)
        rows = [
            {
                "origin": "local" if m.local else m.origin,
                "version": m.version,
                "weight": float(w),
                "accuracy_local": m.accuracy,
                "evaluated": m.evaluated,
                "accuracy_community": m.community_accuracy,
                "reporters": m.reporters,
            }
            for m, w in zip(members, meta.weights, strict=True)
        ]
        store.save_meta(
            self.repo,
            topic,
            loss=loss,
            model=meta.to_dict(),
            members=rows,
            curve=filtering.loss_curve(scores, data.labels),
            built_at=time.time(),
        )
        self._metas[topic] = meta
        verdicts = self._apply(topic, loss)
        self._reapply_rivals(topic)
        return {
            "meta": meta,
            "members": members,
            "measured": filtering.decision_accuracy(scores, data.labels, loss),
            **verdicts,
        }

    def _apply(self, topic: str, loss: float) -> dict[str, int]:
        """Verdicts for the topic's documents by `filtering.filtering_scores` at the loss; how many of
        each."""
        docs = filtering.topic_documents(self.repo, topic)
        if docs.doc_ids.size == 0:
            store.save_meta(self.repo, topic, loss=loss)
            return {"kept": 0, "rejected": 0, "abstained": 0}
        rivals = self._filtering_metas(topic)
        scores = self._filtering_scores(topic, rivals, self.featurizer.transform(list(docs.texts)))
        decisions = loss_targeted_decisions(scores, loss)
        self._cutoffs[topic] = (rivals, loss, filtering.abstain_cutoff(scores, decisions))
        verdicts = filtering.write_verdicts(self.repo, docs.doc_ids, decisions)
        store.save_meta(self.repo, topic, loss=loss)  # counts: the documents' verdicts
        return verdicts

    def _filtering_scores(self, topic: str, metas: dict[str, MetaClassifier], X: Any) -> np.ndarray:
        """`filtering.filtering_scores` of the topic's documents X, where each meta-classifier that scored
        the very same X at the topic's last full filtering gives those scores again. A new meta-classifier
        of one topic filters every topic it is a rival of again (`_reapply_rivals`: 110 topics for a
        top-level one of 150), and each of those filterings scored its documents with all its own rivals
        again, unchanged but one: 40% of a round's meta rebuilds after 150 topics' models arrived."""
        cached, features = self._scored.get(topic), _features_digest(X)
        known = cached[1] if cached is not None and cached[0] == features else {}
        scores = {}
        for key, meta in metas.items():
            hit = known.get(key)
            if hit is not None and hit[0] is meta:
                scores[key] = hit[1]
            else:
                scores[key] = latent_meta.meta_scores(meta, X)
                scores[key].flags.writeable = False  # kept for the next filtering
        self._scored[topic] = (features, {key: (metas[key], scores[key]) for key in metas})
        return filtering.filtering_margins(scores, topic)

    def _filtering_metas(self, topic: str) -> dict[str, MetaClassifier]:
        """The meta-classifiers filtering the topic reads: its own and its rival topics'."""
        rivals = filtering.rival_topics(topic, self._metas)
        return {t: self._metas[t] for t in [topic, *rivals]}

    def _reapply_rivals(self, topic: str) -> None:
        """Filter again the topics a new meta-classifier of `topic` competes with
        (`filtering.rivalled_by`)."""
        for rivalled in filtering.rivalled_by(topic, self._metas):
            row = store.load_meta(self.repo, rivalled)
            self._apply(rivalled, row["loss"] if row else self.settings.default_loss)

    def _judge_new(self, topic: str, loss: float) -> None:
        """Verdicts for the topic's documents without one, against the cut-off of the last full
        filtering with these meta-classifiers and loss (a full filtering when there is none)."""
        known = self._cutoffs.get(topic)
        rivals = self._filtering_metas(topic)
        if known is None or known[1] != loss or not _same_models(known[0], rivals):
            self._apply(topic, loss)
            return
        docs = filtering.topic_documents(self.repo, topic, unjudged=True)
        if docs.doc_ids.size:
            scores = filtering.filtering_scores(rivals, topic, self.featurizer.transform(list(docs.texts)))
            filtering.write_verdicts(self.repo, docs.doc_ids, filtering.cutoff_decisions(scores, known[2]))

    async def judge_new_documents(self) -> list[str]:
        """Restrictive verdicts at the topic's loss for every topic with documents filed since its last
        verdicts (kept current each round: peers are offered only the results the filter keeps);
        returns the topics judged again."""
        judged = []
        for topic in list(self._metas):
            if await self.db(store.unjudged, topic):
                row = await self.db(store.load_meta, topic)
                loss = row["loss"] if row else self.settings.default_loss
                await self.work(self._judge_new, topic, loss)
                judged.append(topic)
        return judged

    def _outgrown(self, repo: Repository) -> list[str]:
        """Topics whose meta-classifier was built on fewer than 1/REBUILD_GROWTH of the own documents now."""
        if not self._built_on:
            return []
        now = training.own_document_count(repo)
        return [topic for topic, then in self._built_on.items() if now >= REBUILD_GROWTH * max(then, 1)]

    async def rebuild_stale(self) -> None:
        """Build again the meta-classifiers waiting for it (a new model of theirs, a grown crawl)."""
        for topic in sorted(self.stale):
            self.stale.discard(topic)  # before the rebuild: a model arriving meanwhile marks it again
            await self.rebuild_meta(topic)

    async def rebuild_meta(self, topic: str) -> None:
        """The node's meta-classifier over every model it holds for the topic (thesis 3.3.2: Meta_i)."""
        await self.work(self.combine, topic, None, None)
        self.publish("meta", {"topic": topic})

    async def _load_metas(self) -> None:
        def load(repo: Repository) -> dict[str, MetaClassifier]:
            metas = {}
            for (topic,) in repo.db.execute("SELECT topic FROM coop_meta WHERE model IS NOT NULL").fetchall():
                row = store.load_meta(repo, topic)
                if row and row["model"]:
                    metas[topic] = MetaClassifier.from_dict(row["model"])
            return metas

        self._metas = await self.db(load)
        if self._metas:  # a restarted node rebuilds them when its crawl has grown from here
            own = await self.db(training.own_document_count)
            self._built_on = dict.fromkeys(self._metas, own)

    def has_meta(self, topic: str) -> bool:
        """Whether the topic has a meta-classifier (built, or loaded from the last run)."""
        return topic in self._metas

    def meta_confidence(self, topic: str, texts: Sequence[str]) -> np.ndarray | None:
        """Signed meta confidence of texts for a topic (None without a meta-classifier): the classifier the
        crawler's focus loop uses for classification and link priorities (thread-safe, no I/O)."""
        meta = self._metas.get(topic)
        if meta is None:
            return None
        return latent_meta.meta_scores(meta, self.featurizer.transform(list(texts)))

    async def meta(self, topic: str) -> dict[str, Any]:
        row = await self.db(store.load_meta, topic)
        if row is None:
            raise KeyError(f"no meta-classifier for {topic!r} yet: build one with POST /api/meta/build")
        return {
            "topic": topic,
            "loss": row["loss"],
            "curve": row["curve"],
            **await self.db(filtering.verdict_counts, topic),
            "models": row["members"],
            "combination": latent_meta.combination(row["model"], row["members"] or []),
            "rival_topics": filtering.rival_topics(topic, self._metas),
            "build": row["build"],
        }

    async def set_loss(self, topic: str, loss: float) -> dict[str, Any]:
        """Restrictive filtering of the topic's documents at the user's loss; verdicts stored per document.
        The meta-classifier is built again for that loss: which of the community's models may vote depends
        on it (`latent_meta.accepts_beyond_the_loss`)."""
        if not 0.0 <= loss < 1.0:
            raise ValueError("loss must lie in [0, 1)")
        row = await self.db(store.load_meta, topic)
        if topic not in self._metas or row is None or row["loss"] != loss:
            built = await self.work(self.combine, topic, self._built_from(row), loss)
            if built is None:
                raise KeyError(f"no meta-classifier for {topic!r}: the topic has no model yet")
            verdicts = {key: built[key] for key in filtering.VERDICT_KEYS}
            row = await self.db(store.load_meta, topic)  # the one built for the loss
        else:
            verdicts = await self.work(self._apply, topic, loss)
        answer = {
            "topic": topic,
            "loss": loss,
            **verdicts,
            "combination": latent_meta.combination(row["model"], row["members"] or []),
        }
        self.publish("meta", answer)
        return answer

    @staticmethod
    def _built_from(row: dict[str, Any] | None) -> list[str] | None:
        """The peers whose models the stored meta-classifier was built from (None: every model held)."""
        if row is None or not row["members"]:
            return None
        return [m["origin"] for m in row["members"] if m["origin"] != "local"]

    async def topic_overview(self) -> dict[str, dict[str, Any]]:
        """Every topic's meta summary and local model version, in one read (`store.topic_overview`)."""
        return await self.db(store.topic_overview)

    async def models(self, topic: str | None = None) -> list[dict[str, Any]]:
        """The held models with their measured quality. `weight` is the weight the topic's last meta build
        gave the model, 0 when that build left it out, None before any build: what its say actually is,
        since a build weighs models by their agreement on the node's own documents, not by the handful of
        labels behind `accuracy_local`; `weight_measured` keeps the weight those labels alone give."""
        rows = await self.db(store.model_rows, topic)
        built = await self.db(store.meta_weights, topic)
        for row in rows:
            if row["role"] == store.LOCAL:
                row["origin"] = "local"
            row["weight_measured"] = row["weight"]
            in_meta = built.get(row["topic"])
            row["weight"] = None if in_meta is None else in_meta.get(row["origin"], 0.0)
        return rows

    # -- blocked peers --------------------------------------------------------------------------------------
    async def forget_peer(self, peer: str) -> dict[str, Any]:
        """A peer the user blocked (the network refuses it already): what it sent leaves the node
        (`store.forget_peer`), its cross-validation reports no longer count, and every meta-classifier
        that gave its model a say is built again without it."""
        forgotten = await self.db(store.forget_peer, peer)
        self.exchange.forget(peer)
        self.results.forget(peer)
        self.meta_protocol.forget(peer)
        topics = forgotten.pop("topics")
        for topic in topics:
            await self.rebuild_meta(topic)
        return {**forgotten, "meta_rebuilt": topics}

    # -- figures for the API and the UI -------------------------------------------------------------------
    async def peers(self) -> list[dict[str, Any]]:
        now = time.time()
        mine = set(await self.topics())
        rows = []
        shared = {topic: set(self.community(topic)) for topic in mine}
        neighbours = {n.peer_id: n for n in self.network.membership.neighbours.peers()}
        for peer in self.known_peers():
            entry = neighbours.get(peer)
            record = self.ledger.record_of(peer)
            rows.append(
                {
                    "peer_id": peer,
                    "addrs": list(entry.addrs) if entry else [],
                    "last_seen": entry.last_contact if entry else now,
                    "shared_topics": sorted(t for t, members in shared.items() if peer in members),
                    "bytes_in": self.protocols.bytes_in[peer],
                    "bytes_out": self.protocols.bytes_out[peer],
                    "rejected": [
                        {"reason": reason, "count": count}
                        for reason, count in (record.reasons if record else {}).items()
                    ],
                }
            )
        return rows

    async def stats(self) -> dict[str, Any]:
        return {
            "models_received": await self.db(store.count_received),
            "results_pooled": await self.db(store.count_pooled),
            "bytes_exchanged": self.network.traffic(),
            "bytes_by_message": self.network.bytes_by_message(),
            "peers": len(self.known_peers()),
            "rounds": self.rounds,
        }

    def publish(self, kind: str, data: dict[str, Any]) -> None:
        if self.service is not None and hasattr(self.service, "publish"):
            self.service.publish(kind, data)


def _features_digest(X: Any) -> bytes:
    """A digest of a sparse matrix of the featurizer's rows (its shape and stored entries, in order)."""
    X = X.tocsr()
    return digest(np.asarray(X.shape), X.indptr, X.indices, X.data)


def _same_models(a: Mapping[str, MetaClassifier], b: Mapping[str, MetaClassifier]) -> bool:
    """The same topics with the very same meta-classifier objects (a rebuild makes a new one)."""
    return a.keys() == b.keys() and all(a[t] is b[t] for t in a)
