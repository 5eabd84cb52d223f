"""`Cooperation`: the semantic layer of thesis 3.3 for one running node.

Each round (every `sync_interval` seconds, or at once after a topics import) the node retrains the local
model of every topic whose training documents changed and signs the new version; exchanges neighbour lists
with the peers it knows (push-pull, thesis 3.3.1) and connects to new ones; tells every peer its topic keys
and model versions and learns theirs (the topic communities); fetches newer models of shared topics, checks
them (schema, signature, origin), measures them on its own labelled documents and stores them; rebuilds the
topic's meta-classifier from everything it holds; and syncs the peers' crawl results of shared topics into
its repository as pooled documents, queueing the URLs of their most confident pages as seeds.

The distributed meta-classifier protocol of figures 3.5/3.6 is `build_meta`: METAREQUEST "estimate" to the
community (each peer cross-validates the others' classifiers on its data without their training documents
and returns errors and covariances), the peer-count estimate for the user's goal, METAREQUEST "build" to the
chosen peers (each sends its classifier), and the meta-classifier over the collected models. A model's
weight comes from its accuracy as the community measured it (3.15): the lower median over the distinct
peers that cross-validated it on their own data (its training documents excluded) and this node's own
measurement, so one lying reporter cannot lift a hostile model; a model this node measured at or below
chance, or whose scores run against this node's labels, has no say at all. The same estimate phase runs in
the cooperation rounds whenever the models held changed, so the meta-classifier the crawler uses between
builds is weighed by the community too.
"""

from __future__ import annotations

import itertools
import logging
import math
import secrets
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import trio

from crawler.repository import Repository
from metamodels.errors import MetamodelError
from metamodels.estimators import (
    correctness_covariance,
    exchangeable_agreement,
    peers_needed,
    robust_cross_accuracy,
)
from metamodels.features import FeatureConfig, Featurizer
from metamodels.linear import LinearModel
from metamodels.meta_classifier import MetaClassifier
from metamodels.restrictive import loss_targeted_decisions
from node.cooperation import learning, store
from node.cooperation.focus import MetaFocus
from node.cooperation.links import (
    CENTROIDS,
    HELLO,
    META,
    MODEL,
    NEIGHBOURS,
    RESULTS,
    ExchangeError,
    Links,
)
from node.cooperation.settings import CooperationSettings
from node.cooperation.wiremodels import (
    centroids_from_payload,
    centroids_payload,
    flipped,
    linear_from_payload,
    linear_payload,
)
from p2p.errors import WireError
from p2p.limits import PeerGuard, PeerLedger, RateLimiter
from p2p.schemas import (
    MAX_PREVIEW_LEN,
    MAX_TITLE_LEN,
    CovarianceReport,
    CovEntry,
    CrawlResult,
    CrossValidationReport,
    CvEntry,
    MetaClassifierOffer,
    MetaRequest,
    ModelRequest,
    ModelResponse,
    NeighbourEntry,
    NeighbourExchange,
    ResultSyncRequest,
    ResultSyncResponse,
    SignedModel,
    TopicAnnouncement,
    TopicEntry,
)
from p2p.signing import sign_model, sign_results, verify_model, verify_result

log = logging.getLogger(__name__)


@dataclass
class PeerState:
    addrs: tuple[str, ...] = ()
    topics: dict[str, int] = field(default_factory=dict)
    last_seen: float = 0.0


class Cooperation:
    """The cooperation layer of one node: `await nursery.start(coop.run)`, then the public methods."""

    def __init__(
        self,
        repository: Path | str,
        host: Any,
        key: Any,
        settings: CooperationSettings | None = None,
        *,
        service: Any = None,
        feature_config: FeatureConfig | None = None,
    ) -> None:
        self.settings = settings or CooperationSettings()
        self.repo = Repository(repository)
        store.ensure_schema(self.repo)
        self.host = host
        self.key = key
        self.service = service
        self.featurizer = Featurizer(feature_config or FeatureConfig())
        p2p = getattr(host, "settings", None)
        self.ledger = PeerLedger(max_violations=getattr(p2p, "max_violations", 20))
        limiter = RateLimiter(getattr(p2p, "requests_per_second", 20.0), getattr(p2p, "request_burst", 40))
        self.links = Links(host, PeerGuard(limiter, self.ledger), self.settings.request_timeout)
        self.peers_state: dict[str, PeerState] = {}
        self._db_limiter = trio.CapacityLimiter(1)
        self._metas: dict[str, MetaClassifier] = {}
        # topic -> (model origin, version) -> reporter -> (correct, evaluated): the community's
        # cross-validation reports (3.15), the newest per reporter; and the model versions they were for
        self._reports: dict[str, dict[tuple[str, int], dict[str, tuple[int, int]]]] = {}
        self._reported: dict[str, tuple[tuple[str, int], ...]] = {}
        self._poke = trio.Event()
        self.rounds = 0

    @classmethod
    def for_node(cls, service: Any) -> Cooperation:
        """Built by `node.service.NodeService` once its network runs."""
        network = service.network
        host = getattr(network, "host", network)
        key = host.host.get_private_key()
        settings = getattr(service.config, "cooperation", None) or CooperationSettings()
        return cls(service.data.repository, host, key, settings, service=service)

    @property
    def peer_id(self) -> str:
        return self.links.peer_id

    async def _db(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        return await self._work(lambda: fn(self.repo, *args, **kwargs))

    async def _work(self, fn: Any, *args: Any) -> Any:
        """Run `fn(*args)` in a worker thread; one at a time, since they share one SQLite connection."""
        return await trio.to_thread.run_sync(fn, *args, limiter=self._db_limiter)

    def close(self) -> None:
        self.repo.close()

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the protocols and cooperate in rounds until cancelled."""
        self.links.handle(HELLO, TopicAnnouncement, self._on_hello)
        self.links.handle(NEIGHBOURS, NeighbourExchange, self._on_neighbours)
        self.links.handle(MODEL, ModelRequest, self._on_model)
        self.links.handle(CENTROIDS, ModelRequest, self._on_centroids)
        self.links.handle(RESULTS, ResultSyncRequest, self._on_results)
        self.links.handle(META, MetaRequest, self._on_meta)
        await self._load_metas()
        task_status.started(self)
        try:
            while True:
                try:
                    await self.round()
                except (MetamodelError, ExchangeError, OSError, sqlite3.Error) as exc:
                    # a busy repository (the crawler writes constantly) costs one round, not the layer
                    log.warning("cooperation round failed: %s", exc)
                with trio.move_on_after(self.settings.sync_interval):
                    await self._poke.wait()
                self._poke = trio.Event()
        finally:
            self.close()

    async def topics_changed(self, keys: Sequence[str] = ()) -> None:
        """After a topics import: retrain and announce at once."""
        self._poke.set()

    async def round(self) -> None:
        """One cooperation round (see the module docstring)."""
        await self.refresh_local_models()
        await self.exchange_neighbours()
        await self.announce()
        await self.fetch_models()
        await self.gather_reports()
        await self.sync_results()
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

    # -- local models -------------------------------------------------------------------------------------
    async def topics(self) -> list[str]:
        return await self._db(_topic_keys)

    async def refresh_local_models(self) -> list[str]:
        """Retrain the topics whose training documents changed; returns the topics with a new version."""
        fingerprint = await self._db(learning.training_fingerprint)
        changed = []
        for topic in await self.topics():
            stored = await self._db(store.load_models, topic, "linear", store.LOCAL)
            if stored and stored[0].fingerprint == fingerprint:
                continue
            model = await self._work(self._train, topic)
            if model is None:
                continue
            version = stored[0].version + 1 if stored else 1
            signed = sign_model(self.key, linear_payload(model, topic, version, self.peer_id))
            await self._db(store.save_model, signed, store.LOCAL, fingerprint=fingerprint)
            changed.append(topic)
            self._publish("model", {"topic": topic, "origin": "local", "version": version})
        for topic in changed:
            await self.rebuild_meta(topic)
        return changed

    def _labelled(self, topic: str) -> learning.LabelledData:
        rows = learning.training_rows(self._thread_repo())
        return learning.labelled_data(rows, topic, self.featurizer)

    def _thread_repo(self) -> Repository:
        return self.repo

    def _train(self, topic: str) -> LinearModel | None:
        data = self._labelled(topic)
        return learning.train_local(data, self.settings.min_training_docs)

    async def local_model(self, topic: str) -> store.StoredModel | None:
        stored = await self._db(store.load_models, topic, "linear", store.LOCAL)
        return stored[0] if stored else None

    async def _offered(self, topic: str) -> SignedModel | None:
        """The node's own signed model of a topic as offered to peers (label-flipped when hostile)."""
        stored = await self.local_model(topic)
        if stored is None:
            return None
        if not self.settings.hostile:
            return stored.model
        bad = flipped(linear_from_payload(stored.model.payload))
        return sign_model(self.key, linear_payload(bad, topic, stored.version, self.peer_id))

    # -- membership and communities -----------------------------------------------------------------------
    def connected_peers(self) -> list[str]:
        network = self.host.host.get_network()
        return sorted(str(p) for p in network.connections if str(p) != self.peer_id)

    def known_peers(self) -> list[str]:
        return sorted(set(self.connected_peers()) | set(self.peers_state))

    def community(self, topic: str) -> list[str]:
        """Peers that announced the topic key (thesis: peers sharing a topic of the taxonomy)."""
        return sorted(p for p, s in self.peers_state.items() if topic in s.topics and not self._banned(p))

    def _banned(self, peer: str) -> bool:
        return self.ledger.is_banned(peer)

    def _my_entries(self) -> tuple[NeighbourEntry, ...]:
        now = time.time()
        entries = [NeighbourEntry(self.peer_id, tuple(self.host.transport_addrs()[:8]), now)]
        for peer, state in self.peers_state.items():
            if state.addrs:
                entries.append(NeighbourEntry(peer, state.addrs[:8], state.last_seen))
        return tuple(entries[:256])

    def _learn_neighbours(self, message: NeighbourExchange) -> None:
        for entry in message.entries:
            if entry.peer_id == self.peer_id:
                continue
            state = self.peers_state.setdefault(entry.peer_id, PeerState())
            state.addrs = entry.addrs or state.addrs

    async def _on_neighbours(self, peer: str, message: NeighbourExchange) -> list[NeighbourExchange]:
        self._learn_neighbours(message)
        return [NeighbourExchange(self._my_entries())]

    async def exchange_neighbours(self) -> None:
        for peer in self.connected_peers():
            try:
                (reply,) = await self.links.request(
                    peer, NEIGHBOURS, NeighbourExchange(self._my_entries()), [NeighbourExchange]
                )
            except ExchangeError as exc:
                log.info("neighbour exchange: %s", exc)
                continue
            self._learn_neighbours(reply)  # type: ignore[arg-type]
        connected = set(self.connected_peers())
        for peer, state in list(self.peers_state.items()):
            if peer not in connected and state.addrs and not self._banned(peer):
                await self._connect(peer, state.addrs)

    async def _connect(self, peer: str, addrs: Sequence[str]) -> None:
        from libp2p.peer.id import ID

        try:
            await self.host.connect(ID.from_base58(peer), list(addrs))
        except Exception as exc:  # unreachable peers are normal
            log.info("cannot reach %s: %s", peer, exc)

    async def _announcement(self) -> TopicAnnouncement:
        versions = {
            m.topic: m.version for m in await self._db(store.load_models, None, "linear", store.LOCAL)
        }
        topics = await self.topics()
        entries = tuple(TopicEntry(t, versions.get(t, 0)) for t in topics[:64] if len(t) <= 128)
        return TopicAnnouncement(self.peer_id, entries)

    def _learn_topics(self, peer: str, message: TopicAnnouncement) -> None:
        if message.origin != peer:
            self.links.reject(peer, WireError("wrong_origin", "announcement names another peer"))
            return
        state = self.peers_state.setdefault(peer, PeerState())
        state.topics = {t.key: t.model_version for t in message.topics}
        state.last_seen = time.time()

    async def _on_hello(self, peer: str, message: TopicAnnouncement) -> list[TopicAnnouncement]:
        self._learn_topics(peer, message)
        return [await self._announcement()]

    async def announce(self) -> None:
        """Push-pull of topic keys and model versions with every connected peer."""
        mine = await self._announcement()
        for peer in self.connected_peers():
            if self._banned(peer):
                continue
            try:
                (reply,) = await self.links.request(peer, HELLO, mine, [TopicAnnouncement])
            except ExchangeError as exc:
                log.info("hello: %s", exc)
                continue
            self._learn_topics(peer, reply)  # type: ignore[arg-type]

    # -- model exchange -----------------------------------------------------------------------------------
    async def _on_model(self, peer: str, request: ModelRequest) -> list[ModelResponse]:
        return [ModelResponse(request.topic, await self._offered(request.topic))]

    def _checked_model(
        self, peer: str, signed: SignedModel | None, topic: str, kind: str
    ) -> SignedModel | None:
        """A peer's model after signature, origin and kind checks; None (and a counted rejection) if bad."""
        if signed is None:
            return None
        try:
            payload = verify_model(signed)
            if payload.origin != peer:
                raise WireError("wrong_origin", "a peer may only send its own models")
            if payload.topic != topic or payload.kind != kind:
                raise WireError("bad_model", f"asked for a {kind} model of {topic!r}")
            if kind == "linear":
                linear_from_payload(payload)
            else:
                centroids_from_payload(payload)
        except WireError as error:
            self.links.reject(peer, error)
            return None
        return signed

    async def fetch_model(self, peer: str, topic: str) -> SignedModel | None:
        """Fetch, check, measure and store a peer's model of a topic."""
        (reply,) = await self.links.request(peer, MODEL, ModelRequest(topic), [ModelResponse])
        signed = self._checked_model(peer, reply.model, topic, "linear")  # type: ignore[attr-defined]
        if signed is None:
            return None
        member = await self._work(self._measure_received, signed)
        await self._db(
            store.save_model,
            signed,
            store.RECEIVED,
            accuracy=member.accuracy,
            evaluated=member.evaluated,
            weight=member.weight,
        )
        self._publish(
            "model",
            {"topic": topic, "origin": peer, "version": signed.payload.version, "weight": member.weight},
        )
        return signed

    def _measure_received(self, signed: SignedModel) -> learning.Member:
        payload = signed.payload
        data = self._labelled(payload.topic)
        return learning.received_member(payload.origin, payload.version, linear_from_payload(payload), data)

    async def fetch_models(self) -> int:
        """Fetch every shared topic's model whose announced version is newer than the one held."""
        held = {(m.topic, m.origin): m.version for m in await self._db(store.load_models, None, "linear")}
        mine = set(await self.topics())
        fetched = 0
        touched: set[str] = set()
        for peer, state in list(self.peers_state.items()):
            if self._banned(peer):
                continue
            for topic, version in state.topics.items():
                if topic not in mine or version <= held.get((topic, peer), 0):
                    continue
                try:
                    if await self.fetch_model(peer, topic) is not None:
                        fetched += 1
                        touched.add(topic)
                except ExchangeError as exc:
                    log.info("model fetch: %s", exc)
        for topic in touched:
            await self.rebuild_meta(topic)
        return fetched

    async def gather_reports(self) -> list[str]:
        """Ask each topic's community to cross-validate the topic's models on their data (the estimate
        phase of METAREQUEST, 3.15) whenever the models held changed since the last reports, and rebuild
        the meta-classifier with the weights they give; returns the topics asked about."""
        held: dict[str, list[tuple[str, int]]] = {}
        for m in await self._db(store.load_models, None, "linear"):
            held.setdefault(m.topic, []).append((m.origin, m.version))
        asked = []
        for topic in await self.topics():
            community = self.community(topic)[: self.settings.max_meta_peers - 1]
            versions = tuple(sorted(held.get(topic, [])))
            if not community or len(versions) < 2 or self._reported.get(topic) == versions:
                continue
            session = secrets.token_hex(8)
            participants = (self.peer_id, *community)
            loss = self.settings.default_loss
            reports = await self._estimate(topic, session, loss, None, community, participants)
            self._record_reports(topic, reports)
            self._reported[topic] = versions
            await self.rebuild_meta(topic)
            asked.append(topic)
        return asked

    def _record_reports(
        self, topic: str, reports: Sequence[tuple[CrossValidationReport, CovarianceReport]]
    ) -> None:
        """Keep each reporter's newest cross-validation results; a reporter's entry on its own model is
        dropped (a model cannot vouch for itself)."""
        table = self._reports.setdefault(topic, {})
        for cv, _ in reports:
            for votes in table.values():
                votes.pop(cv.reporter, None)
            for entry in cv.entries:
                if entry.origin == cv.reporter or entry.tested <= 0:
                    continue
                correct = max(0, min(entry.tested, entry.tested - entry.errors))
                votes = table.setdefault((entry.origin, entry.model_version), {})
                votes[cv.reporter] = (correct, entry.tested)

    # -- meta-classifier ----------------------------------------------------------------------------------
    def _members(self, topic: str, origins: Sequence[str] | None = None) -> list[learning.Member]:
        """The local model and the received ones (all, or those of `origins`), weighed on local data."""
        data = self._labelled(topic)
        reports = self._reports.get(topic, {})
        members = []
        for stored in store.load_models(self.repo, topic, "linear"):
            model = linear_from_payload(stored.model.payload)
            if stored.role == store.LOCAL:
                votes = reports.get((self.peer_id, stored.version))
                members.insert(0, learning.local_member(self.peer_id, stored.version, model, data, votes))
            elif origins is None or stored.origin in origins:
                votes = reports.get((stored.origin, stored.version))
                members.append(learning.received_member(stored.origin, stored.version, model, data, votes))
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

    def _build(self, topic: str, origins: Sequence[str] | None, loss: float | None) -> dict[str, Any] | None:
        """Meta-classifier of the topic from the held models; stored, applied to the topic's documents."""
        members = self._members(topic, origins)
        if not members:
            return None
        meta = learning.meta_classifier(members)
        data = self._labelled(topic)
        scores = learning.meta_scores(meta, data.X)
        previous = store.load_meta(self.repo, topic)
        loss = loss if loss is not None else previous["loss"] if previous else self.settings.default_loss
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
            curve=learning.loss_curve(scores, data.labels),
            built_at=time.time(),
        )
        self._metas[topic] = meta
        kept, abstained = self._apply(topic, meta, loss)
        return {
            "meta": meta,
            "members": members,
            "measured": learning.decision_accuracy(scores, data.labels, loss),
            "kept": kept,
            "abstained": abstained,
        }

    def _apply(self, topic: str, meta: MetaClassifier, loss: float) -> tuple[int, int]:
        docs = learning.topic_documents(self.repo, topic)
        if docs.doc_ids.size == 0:
            store.save_meta(self.repo, topic, kept=0, abstained=0)
            return 0, 0
        scores = learning.meta_scores(meta, self.featurizer.transform(list(docs.texts)))
        decisions = loss_targeted_decisions(scores, loss)
        kept, abstained = learning.write_verdicts(self.repo, docs.doc_ids, decisions)
        store.save_meta(self.repo, topic, loss=loss, kept=kept, abstained=abstained)
        return kept, abstained

    async def rebuild_meta(self, topic: str) -> None:
        """The node's meta-classifier over every model it holds for the topic (thesis 3.3.2: Meta_i)."""
        await self._work(self._build, topic, None, None)
        self._publish("meta", {"topic": topic})

    async def _load_metas(self) -> None:
        def load(repo: Repository) -> dict[str, MetaClassifier]:
            metas = {}
            for (topic,) in repo.db.execute("SELECT topic FROM coop_meta WHERE model IS NOT NULL").fetchall():
                row = store.load_meta(repo, topic)
                if row and row["model"]:
                    metas[topic] = MetaClassifier.from_dict(row["model"])
            return metas

        self._metas = await self._db(load)

    def meta_confidence(self, topic: str, texts: Sequence[str]) -> np.ndarray | None:
        """Signed meta confidence of texts for a topic (None without a meta-classifier): the classifier the
        crawler's focus loop uses for classification and link priorities (thread-safe, no I/O)."""
        meta = self._metas.get(topic)
        if meta is None:
            return None
        return learning.meta_scores(meta, self.featurizer.transform(list(texts)))

    async def build_meta(
        self, topic: str, loss: float = 0.2, error_goal: float | None = None
    ) -> dict[str, Any]:
        """The distributed meta-classifier protocol (thesis figures 3.5 and 3.6), as the initiator."""
        if not 0.0 <= loss < 1.0 or (error_goal is not None and not 0.0 < error_goal < 1.0):
            raise ValueError("loss must lie in [0, 1) and error_goal in (0, 1)")
        if topic not in await self.topics():
            raise KeyError(f"no topic {topic!r}: list topics with GET /api/topics")
        if await self.local_model(topic) is None:
            await self.refresh_local_models()
        community = self.community(topic)[: self.settings.max_meta_peers - 1]
        session = secrets.token_hex(8)
        participants = (self.peer_id, *community)
        reports = await self._estimate(topic, session, loss, error_goal, community, participants)
        self._record_reports(topic, reports)
        accuracies = await self._work(self._accuracies, topic)
        covariances = [e.covariance for r in reports for e in r[1].entries]
        honest = [a for a in accuracies.values() if a > 0.5]
        mean_accuracy = float(np.mean(honest)) if honest else 0.5
        covariance = float(np.mean(covariances)) if covariances else 0.0
        estimate = peers_needed(
            mean_accuracy,
            max(covariance, 0.0),
            max_error=error_goal,
            max_loss=loss if error_goal is None else None,
            max_peers=len(participants),
            model="exchangeable",
        )
        needed = estimate.peers if estimate is not None else len(participants)
        if error_goal is None:
            # the estimate is for unanimous decisions, whose loss grows with every peer; this meta-classifier
            # filters loss-targeted (3.4.4), which meets the loss with any number of peers while each further
            # honest peer lowers the error: with a loss goal alone, every honest peer is asked
            needed = len(participants)
        ranked = sorted(community, key=lambda p: -accuracies.get(p, 0.0))
        chosen = [p for p in ranked if accuracies.get(p, 0.0) > 0.5][: max(0, needed - 1)]
        used = await self._collect(topic, session, loss, error_goal, chosen)
        built = await self._work(self._build, topic, used, loss)
        if built is None:
            raise ValueError(f"topic {topic!r} has no model yet: import training documents for it first")
        predicted = exchangeable_agreement(mean_accuracy, max(covariance, 0.0), 1 + len(used))
        answer = {
            "topic": topic,
            "peers_used": len(used),
            "peers_needed": needed,
            "predicted": {"loss": predicted.loss, "accuracy": learning.finite_or_none(predicted.accuracy)},
            "measured": {"accuracy": built["measured"]},
            "kept": built["kept"],
            "abstained": built["abstained"],
        }
        await self._db(store.save_meta, topic, build=answer)
        self._publish("meta", answer)
        return answer

    async def _estimate(
        self,
        topic: str,
        session: str,
        loss: float,
        goal: float | None,
        community: Sequence[str],
        participants: Sequence[str],
    ) -> list[tuple[CrossValidationReport, CovarianceReport]]:
        request = MetaRequest(session, topic, self.peer_id, "estimate", loss, goal, tuple(participants))
        reports: list[tuple[CrossValidationReport, CovarianceReport]] = []

        async def ask(peer: str) -> None:
            try:
                cv, cov = await self.links.request(
                    peer, META, request, [CrossValidationReport, CovarianceReport]
                )
            except ExchangeError as exc:
                log.info("meta estimate: %s", exc)
                return
            if cv.reporter == peer and cov.reporter == peer:  # type: ignore[attr-defined]
                reports.append((cv, cov))  # type: ignore[arg-type]

        async with trio.open_nursery() as nursery:
            for peer in community:
                nursery.start_soon(ask, peer)
        return reports

    def _accuracies(self, topic: str) -> dict[str, float]:
        """acc(m) per peer (3.15): the robust aggregate over the reporters that tested its newest model,
        this node included; 0 for a held model without a say (vetoed here, or not calibratable)."""
        accuracies: dict[str, float] = {}
        newest: dict[str, int] = {}
        for (origin, version), votes in self._reports.get(topic, {}).items():
            if origin == self.peer_id or version < newest.get(origin, 0):
                continue
            aggregate = robust_cross_accuracy(votes, learning.MIN_REPORT)
            if aggregate is not None:
                accuracies[origin], newest[origin] = aggregate[0], version
        for member in self._members(topic):
            if not member.local:
                accuracies[member.origin] = member.community_accuracy if member.weight > 0 else 0.0
        return accuracies

    async def _collect(
        self, topic: str, session: str, loss: float, goal: float | None, chosen: Sequence[str]
    ) -> list[str]:
        """METAREQUEST "build" to the chosen peers; their classifiers are checked and stored."""
        request = MetaRequest(session, topic, self.peer_id, "build", loss, goal, ())
        used: list[str] = []

        async def ask(peer: str) -> None:
            try:
                (offer,) = await self.links.request(peer, META, request, [MetaClassifierOffer])
            except ExchangeError as exc:
                log.info("meta build: %s", exc)
                return
            signed = self._checked_model(peer, offer.model, topic, "linear")  # type: ignore[attr-defined]
            if signed is None:
                return
            await self._db(store.save_model, signed, store.RECEIVED)
            used.append(peer)

        async with trio.open_nursery() as nursery:
            for peer in chosen:
                nursery.start_soon(ask, peer)
        return sorted(used)

    async def _on_meta(self, peer: str, request: MetaRequest) -> list[Any]:
        if request.initiator != peer:
            raise WireError("wrong_origin", "the initiator must send its own METAREQUEST")
        if request.phase == "build":
            offered = await self._offered(request.topic)
            if offered is None:
                raise WireError("no_model", f"no model of {request.topic!r} here")
            return [MetaClassifierOffer(request.session, offered)]
        models: dict[str, LinearModel] = {}
        versions: dict[str, int] = {}
        held = {
            m.origin: m for m in await self._db(store.load_models, request.topic, "linear", store.RECEIVED)
        }
        for origin in request.participants:
            if origin == self.peer_id:
                continue
            stored = held.get(origin)
            signed = stored.model if stored else None
            if signed is None and origin in self.known_peers():
                try:
                    signed = await self.fetch_model(origin, request.topic)
                except ExchangeError:
                    signed = None
            if signed is not None:
                models[origin] = linear_from_payload(signed.payload)
                versions[origin] = signed.payload.version
        cv_entries, cov_entries = await self._work(self._cross_validate, request.topic, models, versions)
        return [
            CrossValidationReport(request.session, request.topic, self.peer_id, cv_entries),
            CovarianceReport(request.session, request.topic, self.peer_id, cov_entries),
        ]

    def _cross_validate(
        self, topic: str, models: dict[str, LinearModel], versions: dict[str, int]
    ) -> tuple[tuple[CvEntry, ...], tuple[CovEntry, ...]]:
        """Errors of the other peers' classifiers on this node's data without their training documents,
        and the covariances of their correctness on documents neither was trained on (3.15-3.16)."""
        data = self._labelled(topic)
        correct: dict[str, np.ndarray] = {}
        held: dict[str, np.ndarray] = {}
        entries = []
        for origin, model in models.items():
            right, tested, mask = learning.measure(model, data)
            entries.append(CvEntry(origin, versions[origin], tested, tested - right))
            correct[origin] = (model.decision_function(data.X) > 0).astype(np.int8) == data.labels
            held[origin] = mask
        covs = []
        for a, b in itertools.combinations(sorted(models), 2):
            both = held[a] & held[b]
            if both.sum() >= 2:
                c = correctness_covariance(correct[a][both], correct[b][both])
                covs.append(CovEntry(a, b, int(both.sum()), float(min(0.25, max(-0.25, c)))))
        return tuple(entries[:1024]), tuple(covs[:1024])

    async def meta(self, topic: str) -> dict[str, Any]:
        row = await self._db(store.load_meta, topic)
        if row is None:
            raise KeyError(f"no meta-classifier for {topic!r} yet: build one with POST /api/meta/build")
        return {
            "topic": topic,
            "loss": row["loss"],
            "curve": row["curve"],
            "kept": row["kept"],
            "abstained": row["abstained"],
            "models": row["members"],
            "build": row["build"],
        }

    async def set_loss(self, topic: str, loss: float) -> dict[str, Any]:
        """Restrictive filtering of the topic's documents at the user's loss; verdicts stored per document."""
        if not 0.0 <= loss < 1.0:
            raise ValueError("loss must lie in [0, 1)")
        meta = self._metas.get(topic)
        if meta is None:
            await self.rebuild_meta(topic)
            meta = self._metas.get(topic)
        if meta is None:
            raise KeyError(f"no meta-classifier for {topic!r}: the topic has no model yet")
        kept, abstained = await self._work(self._apply, topic, meta, loss)
        answer = {"topic": topic, "loss": loss, "kept": kept, "abstained": abstained}
        self._publish("meta", answer)
        return answer

    async def topic_quality(self, topic: str) -> dict[str, Any]:
        row = await self._db(store.load_meta, topic)
        local = await self.local_model(topic)
        accuracy = None
        if row is not None:
            accuracy = next((p["accuracy"] for p in row["curve"] if p["loss"] == row["loss"]), None)
        return {"quality": {"accuracy": accuracy}, "model_version": local.version if local else None}

    async def models(self, topic: str | None = None) -> list[dict[str, Any]]:
        rows = await self._db(store.model_rows, topic)
        for row in rows:
            if row["role"] == store.LOCAL:
                row["origin"] = "local"
        return rows

    # -- collaborative clustering -------------------------------------------------------------------------
    def _topic_matrix(self, topic: str) -> tuple[learning.TopicDocuments, Any]:
        docs = learning.topic_documents(self.repo, topic, include_pooled=False)
        return docs, self.featurizer.transform(list(docs.texts))

    def _local_centroids(self, topic: str, k: int) -> Any:
        docs, X = self._topic_matrix(topic)
        if docs.doc_ids.size < 2 * k:
            return None
        return learning.local_centroids(X, k, self.featurizer)

    async def _on_centroids(self, peer: str, request: ModelRequest) -> list[ModelResponse]:
        """A k-means model of the topic on this node's documents; the request's version field names k."""
        k = request.version or self.settings.cluster_k
        if not 2 <= k <= 32:
            raise WireError("out_of_range", "k must lie in [2, 32]")
        model = await self._work(self._local_centroids, request.topic, k)
        if model is None:
            return [ModelResponse(request.topic, None)]
        payload = centroids_payload(model, request.topic, k, self.peer_id)
        return [ModelResponse(request.topic, sign_model(self.key, payload))]

    async def refine(self, topic: str, k: int | None = None) -> list[dict[str, Any]]:
        """Collaborative clustering (3.3.3): peers' centroids of the topic, meta clusters of own documents."""
        k = k or self.settings.cluster_k
        if not 2 <= k <= 32:
            raise ValueError("k must lie in [2, 32]")
        if topic not in await self.topics():
            raise KeyError(f"no topic {topic!r}: list topics with GET /api/topics")
        models = []
        for peer in self.community(topic):
            try:
                (reply,) = await self.links.request(peer, CENTROIDS, ModelRequest(topic, k), [ModelResponse])
            except ExchangeError as exc:
                log.info("centroids: %s", exc)
                continue
            signed = self._checked_model(peer, reply.model, topic, "centroids")  # type: ignore[attr-defined]
            if signed is not None:
                await self._db(store.save_model, signed, store.RECEIVED)
                models.append(centroids_from_payload(signed.payload))

        def propose() -> list[dict[str, Any]]:
            docs, X = self._topic_matrix(topic)
            if docs.doc_ids.size < 2 * k:
                raise ValueError(
                    f"topic {topic!r} has {docs.doc_ids.size} documents: too few for {k} subtopics"
                )
            own = learning.local_centroids(X, k, self.featurizer)
            proposals = learning.cluster_proposals(
                docs, X, [own, *models], k, self.settings.cluster_loss, self.featurizer
            )
            return store.save_proposals(self.repo, topic, proposals)

        saved = await self._work(propose)
        self._publish("refine", {"topic": topic, "proposals": len(saved), "peers": len(models)})
        return [_public_proposal(p) for p in saved]

    async def proposals(self, topic: str | None = None) -> list[dict[str, Any]]:
        return [_public_proposal(p) for p in await self._db(store.load_proposals, topic)]

    async def accept_proposal(self, proposal_id: int | str, name: str | None = None) -> dict[str, Any]:
        """The proposal becomes subtopic TOPIC/NAME and its documents move there."""
        proposal = await self._proposal(proposal_id)
        label = " ".join((name or proposal["label"]).replace("/", " ").split())
        if not label:
            raise ValueError("a subtopic needs a non-empty name")
        key = f"{proposal['topic']}/{label}"

        def accept(repo: Repository) -> None:
            with repo.transaction() as db:
                db.conn.execute(
                    "INSERT INTO topics (key, name, parent, source, imported_at) "
                    "VALUES (?, ?, ?, 'refine', ?) "
                    "ON CONFLICT(key) DO NOTHING",
                    [key, label, proposal["topic"], time.time()],
                )
                db.conn.executemany(
                    "UPDATE documents SET topic = ? WHERE id = ?",
                    [(key, int(i)) for i in proposal["doc_ids"]],
                )
            store.set_proposal_status(repo, int(proposal["id"]), "accepted", label)

        await self._db(accept)
        self._publish("refine", {"topic": proposal["topic"], "accepted": key})
        return _public_proposal((await self._db(store.load_proposals, None, int(proposal["id"])))[0])

    async def reject_proposal(self, proposal_id: int | str, name: str | None = None) -> dict[str, Any]:
        proposal = await self._proposal(proposal_id)
        await self._db(store.set_proposal_status, int(proposal["id"]), "rejected")
        return _public_proposal((await self._db(store.load_proposals, None, int(proposal["id"])))[0])

    async def _proposal(self, proposal_id: int | str) -> dict[str, Any]:
        try:
            number = int(proposal_id)
        except ValueError:
            raise KeyError(f"no proposal {proposal_id!r}: list them with GET /api/refine?topic=T") from None
        found = await self._db(store.load_proposals, None, number)
        if not found:
            raise KeyError(f"no proposal {proposal_id!r}: list them with GET /api/refine?topic=T")
        if found[0]["status"] != "open":
            raise ValueError(f"proposal {number} is already {found[0]['status']}")
        return found[0]

    # -- pooled results -----------------------------------------------------------------------------------
    async def _on_results(self, peer: str, request: ResultSyncRequest) -> list[ResultSyncResponse]:
        limit = min(request.limit, self.settings.results_per_sync)
        rows = await self._db(store.own_results, request.topic, request.cursor, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        results = [
            CrawlResult(
                url=row["url"],
                title=(row["title"] or "")[:MAX_TITLE_LEN],
                preview=(row["text"] or "")[:MAX_PREVIEW_LEN],
                topic=request.topic,
                confidence=float(row["confidence"] or 0.0)
                if math.isfinite(row["confidence"] or 0.0)
                else 0.0,
                fingerprint=row["fingerprint"],
                origin=self.peer_id,
                fetched_at=float(row["fetched_at"]),
            )
            for _, row in rows
            if len(row["url"]) <= 2048 and row["url"].startswith(("http://", "https://"))
        ]
        cursor = rows[-1][0] if rows else request.cursor
        return [ResultSyncResponse(request.topic, sign_results(self.key, results), cursor, more)]

    async def sync_results(self) -> int:
        """Pull new crawl results of shared topics from every community peer; returns new pooled documents."""
        added = 0
        for topic in await self.topics():
            for peer in self.community(topic):
                added += await self._sync_peer(peer, topic)
        if added and self.service is not None:
            await self._seed_from_hubs()
        return added

    async def _sync_peer(self, peer: str, topic: str) -> int:
        cursor = await self._db(store.cursor_of, peer, topic)
        request = ResultSyncRequest(topic, cursor, self.settings.results_per_sync)
        try:
            (reply,) = await self.links.request(peer, RESULTS, request, [ResultSyncResponse])
        except ExchangeError as exc:
            log.info("result sync: %s", exc)
            return 0
        good = []
        for item in reply.items:  # type: ignore[attr-defined]
            try:
                result = verify_result(item)
                if result.origin != peer:
                    raise WireError("wrong_origin", "a peer may only sync its own results")
            except WireError as error:
                self.links.reject(peer, error)
                continue
            good.append(result)
        added = await self._db(store.pool_results, peer, topic, good, reply.next_cursor)  # type: ignore[attr-defined]
        if added:
            self._publish("peer", {"peer": peer, "topic": topic, "pooled": added})
        return added

    async def _seed_from_hubs(self) -> None:
        """Queue the URLs of the peers' most confident pooled pages of each topic in the local frontier."""

        def best(repo: Repository) -> dict[str, list[str]]:
            seeds: dict[str, list[str]] = {}
            for topic in _topic_keys(repo):
                rows = repo.db.execute(
                    "SELECT url FROM documents WHERE origin IS NOT NULL AND topic = ? "
                    "AND url NOT IN (SELECT url FROM frontier) ORDER BY confidence DESC LIMIT ?",
                    [topic, self.settings.hub_seeds],
                ).fetchall()
                if rows:
                    seeds[topic] = [r[0] for r in rows]
            return seeds

        for topic, urls in (await self._db(best)).items():
            try:
                await self.service.add_seeds(urls, topic=topic)
            except Exception as exc:  # seeding is a bonus; never fail a round for it
                log.info("hub seeds: %s", exc)

    # -- figures for the API and the UI -------------------------------------------------------------------
    async def peers(self) -> list[dict[str, Any]]:
        now = time.time()
        mine = set(await self.topics())
        rows = []
        for peer in self.known_peers():
            state = self.peers_state.get(peer, PeerState())
            record = self.ledger.record_of(peer)
            rows.append(
                {
                    "peer_id": peer,
                    "addrs": list(state.addrs),
                    "last_seen": state.last_seen or now,
                    "shared_topics": sorted(mine & set(state.topics)),
                    "bytes_in": self.links.bytes_in[peer],
                    "bytes_out": self.links.bytes_out[peer],
                    "rejected": [
                        {"reason": reason, "count": count}
                        for reason, count in (record.reasons if record else {}).items()
                    ],
                }
            )
        return rows

    async def stats(self) -> dict[str, Any]:
        return {
            "models_received": await self._db(store.count_received),
            "results_pooled": await self._db(store.count_pooled),
            "bytes_exchanged": self.links.traffic(),
            "bytes_by_message": dict(sorted(self.links.bytes_by_message.items())),
            "peers": len(self.known_peers()),
            "rounds": self.rounds,
        }

    def traffic(self) -> dict[str, int]:
        return self.links.traffic()

    def _publish(self, kind: str, data: dict[str, Any]) -> None:
        if self.service is not None and hasattr(self.service, "publish"):
            self.service.publish(kind, data)


def _topic_keys(repo: Repository) -> list[str]:
    if not repo.db["topics"].exists():
        return []
    return [row[0] for row in repo.db.execute("SELECT key FROM topics ORDER BY key")]


def _public_proposal(row: dict[str, Any]) -> dict[str, Any]:
    return {
        k: row[k]
        for k in ("id", "topic", "label", "top_terms", "sample_titles", "size", "abstained", "status")
    }
