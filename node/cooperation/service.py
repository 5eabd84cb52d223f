"""`Cooperation`: the semantic layer of thesis 3.3 for one running node.

The network is the p2p layer's `p2p.service.P2PService`: it owns membership (thesis 3.3.1 push-pull), the
topic communities (gossip announcements of topic keys and model versions) and the framed request/response
protocols with their guards; this layer plugs its providers and handlers into them. Each round (every
`sync_interval` seconds, or at once after a topics import) the node retrains the local model of every topic
whose training documents changed, signs the new version and announces it to the topic's community; fetches
the model of a community peer it holds none of (announcements bring newer versions, fetched only when newer
than the one held), checks them (schema, signature, origin), measures them on its own labelled documents and
stores them; rebuilds the topic's meta-classifier from everything it holds when a model arrived or its own
crawl grew by half (`REBUILD_GROWTH`); and syncs the peers' crawl results of shared topics into its repository
as pooled documents by cursor (a peer with nothing new is asked less and less often), queueing the URLs of
their most confident pages as seeds (`results.ResultSync`, the layer's `results`). Collaborative clustering is
`refinement.Refinement`, the layer's `refinement`.

The distributed meta-classifier protocol of figures 3.5/3.6 is `build_meta`: METAREQUEST "estimate" to the
community (each peer cross-validates the others' classifiers on its data without their training documents and
returns errors and covariances), the peer-count estimate for the user's goal, METAREQUEST "build" to the
chosen peers (each sends its classifier), and the meta-classifier over the collected models (a build over the
same models and peers as the last estimate phase reuses its reports; a build for a loss goal alone skips the
estimate when this node measured every model itself on enough documents). A model's weight comes from its
accuracy on this node's held-out labelled documents when there are enough of them, else as the community
measured it (3.15): the lower median over the distinct peers that cross-validated it on their own data (its
training documents excluded) and this node's own measurement, so one lying reporter cannot lift a hostile
model; a model this node measured at or below chance, or whose scores run against this node's labels, has no
say at all. The same estimate phase runs in the cooperation rounds once the models held changed and then
stayed the same for a round, so the meta-classifier the crawler uses between builds is weighed by the
community too.

Traffic (each byte counts against the crawl's): no model is trained while the crawler's learning phase
fetches (the phase ends by adding archetypes, which would make that model obsolete within a minute), a
retrained model is published only when it decides differently from the published one
(`republish_agreement`), models ship pruned (`prune_agreement`) with their training documents as short keys,
and a peer is offered only the results the restrictive filter keeps (`share_kept_only`), never its own
(`results`).
"""

from __future__ import annotations

import itertools
import logging
import secrets
import sqlite3
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
import trio

from crawler.focus import HARVESTING
from crawler.repository import Repository, RepositoryError
from crawler.taxonomy import TOPICS_LISTED_API, unknown_topic
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
from node.cooperation.backoff import Backoff
from node.cooperation.focus import MetaFocus
from node.cooperation.refinement import Refinement
from node.cooperation.results import ResultSync
from node.cooperation.settings import CooperationSettings
from node.cooperation.wiremodels import (
    centroids_from_payload,
    feature_config_of,
    flipped,
    linear_from_payload,
    linear_payload,
)
from node.stored_state import topic_keys
from p2p.errors import P2PError, WireError
from p2p.protocols import RESULTS
from p2p.schemas import (
    CovarianceReport,
    CovEntry,
    CrossValidationReport,
    CvEntry,
    HeldModel,
    MetaClassifierOffer,
    MetaRequest,
    ResultSyncRequest,
    SignedModel,
)
from p2p.signing import sign_model, verify_model

log = logging.getLogger(__name__)

REBUILD_GROWTH = 1.5
"""A topic's meta-classifier is rebuilt when the node's own documents grew by this factor since it was built:
its latent class models are fitted on those documents, and a growing crawl is rebuilt for a logarithmic
number of times. (Rebuilt every round instead, an idle node spent 7% of a core on it.)"""

VERDICT_KEYS = ("kept", "rejected", "abstained")
"""A filtering's counts as a build and a new loss answer them (`learning.write_verdicts`)."""


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
        self._held: dict[tuple[str, str], int] = {}  # (topic, origin) -> version of the received model
        self._asked: dict[tuple[str, str], Backoff] = {}  # (peer, topic) of first-contact model fetches
        # (topic, origin) -> (deadline, arrival) of a model fetch under way, so that an announcement, a
        # first contact and a cross-validation request never fetch the same model twice at once
        self._inflight: dict[tuple[str, str], tuple[float, trio.Event]] = {}
        self._stale: set[str] = set()  # topics whose meta-classifier waits for a rebuild
        self._built_on: dict[str, int] = {}  # topic -> the node's own documents when its meta was built
        self._announced: dict[str, int] = {}  # topic -> model version handed to the communities
        self._db_limiter = trio.CapacityLimiter(1)
        self._metas: dict[str, MetaClassifier] = {}
        # topic -> (the meta-classifiers it read: its own and its rivals', loss, |score| cut-off) of the
        # last full restrictive filtering
        self._cutoffs: dict[str, tuple[dict[str, MetaClassifier], float, float]] = {}
        # topic -> (model origin, version) -> reporter -> (correct, evaluated): the community's
        # cross-validation reports (3.15), the newest per reporter; and the model versions they were for
        self._reports: dict[str, dict[tuple[str, int], dict[str, tuple[int, int]]]] = {}
        self._reported: dict[str, tuple[tuple[str, int], ...]] = {}
        # topic -> (models held, participants, their reports) of the last estimate phase: a meta build
        # over the same models and peers reuses it (cross-validation does not depend on the loss)
        self._estimates: dict[str, tuple[Any, frozenset[str], list[Any]]] = {}
        self._held_before: dict[str, tuple[tuple[str, int], ...]] = {}  # models held at the last round
        self._learning_pages: int | None = None  # the crawler's page count at the last look
        self._pages_moved_at = 0.0  # and when it last changed (trio clock)
        self._poke = trio.Event()
        self._closed = False
        self.rounds = 0
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
        if self._closed:
            raise P2PError("the cooperation layer has stopped")
        return await trio.to_thread.run_sync(fn, *args, limiter=self._db_limiter)

    def close(self) -> None:
        self.repo.close()

    # -- lifecycle ----------------------------------------------------------------------------------------
    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the protocols and cooperate in rounds until cancelled."""
        self.network.set_model_provider(self._serve_model)
        self.protocols.serve(RESULTS, ResultSyncRequest, self.results.answer)
        self.network.set_model_filter(self._wants_model)
        self.network.on_model(self._on_announced_model)
        self.protocols.serve_meta(self._on_meta)
        self.protocols.serve_centroids(self.refinement.on_centroids)
        await self._load_metas()
        # a peer blocked while the node ran offline: its models leave the meta-classifiers at the first round
        self._stale.update(await self.db(store.metas_weighing, self.ledger.is_blocked))
        for m in await self.db(store.load_models, None, "linear", store.RECEIVED):
            self._held[(m.topic, m.origin)] = m.version
        await self.announce()
        task_status.started(self)
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
        await self.refresh_local_models()
        await self.announce()
        await self.fetch_models()
        self._stale.update(await self.db(self._outgrown))
        for topic in sorted(self._stale):
            self._stale.discard(topic)  # before the rebuild: a model arriving meanwhile marks it again
            await self.rebuild_meta(topic)
        await self.gather_reports()
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

    # -- local models -------------------------------------------------------------------------------------
    async def topics(self) -> list[str]:
        return await self.db(topic_keys)

    async def refresh_local_models(self, *, now: bool = False) -> list[str]:
        """Retrain the topics whose training documents changed; returns the topics with a new version.
        While the crawler's learning phase runs nothing is trained (unless `now`): the phase ends within
        a minute by adding archetypes to the training documents, so a model trained before would be
        replaced at once and every peer would fetch both. A retrained model that decides like the
        published one (`republish_agreement`) is not published again: the fingerprint moves on, the model
        stays."""
        if not now and self._learning():
            return []
        fingerprint = await self.db(learning.training_fingerprint)
        changed = []
        for topic in await self.topics():
            stored = await self.db(store.load_models, topic, "linear", store.LOCAL)
            if stored and stored[0].fingerprint == fingerprint:
                continue
            previous = linear_from_payload(stored[0].model.payload) if stored else None
            model = await self.work(self._train, topic, previous)
            if model is None:
                continue
            if model is previous:
                await self.db(store.save_model, stored[0].model, store.LOCAL, fingerprint=fingerprint)
                continue
            version = stored[0].version + 1 if stored else 1
            signed = sign_model(self.key, linear_payload(model, topic, version, self.peer_id))
            await self.db(store.save_model, signed, store.LOCAL, fingerprint=fingerprint)
            changed.append(topic)
            self.publish("model", {"topic": topic, "origin": "local", "version": version})
        for topic in changed:
            await self.rebuild_meta(topic)
        return changed

    def _labelled(self, topic: str) -> learning.LabelledData:
        rows = learning.training_rows(self._thread_repo())
        return learning.labelled_data(rows, topic, self.featurizer)

    def _thread_repo(self) -> Repository:
        return self.repo

    def _train(self, topic: str, previous: LinearModel | None = None) -> LinearModel | None:
        """The topic's new local model as it is stored and shipped: its smallest weights dropped while its
        decisions on the node's own documents stay (`prune_agreement`); `previous` itself when the new
        one decides like it on enough of those documents (`republish_agreement`)."""
        data = self._labelled(topic)
        model = learning.train_local(data, self.settings.min_training_docs)
        if model is None:
            return None
        # the shipped model must decide like the full one on the documents it will meet: the node's crawled
        # ones, and its labelled ones (which alone count before the crawl has found enough)
        own = learning.own_documents(self._thread_repo(), self.featurizer)
        X = sp.vstack([own, data.X], format="csr")
        loss = self.settings.default_loss
        model = learning.pruned(model, data, X, loss, self.settings.prune_agreement)
        alike = (
            previous is not None
            and X.shape[0] >= learning.MIN_AGREEMENT_DOCUMENTS
            and learning.decision_agreement(previous, model, X, loss) >= self.settings.republish_agreement
        )
        return previous if alike else model

    def _learning(self) -> bool:
        """Whether the node's crawler has not left its learning phase yet and is still fetching (it did not
        reach its page limit, and its page count moved within the last three rounds' time, or this is
        the first look): the training documents are about to grow. A crawler whose focus is not
        installed yet (a round between an import's storing and its focus refresh) counts as learning;
        False without a crawler."""
        crawler = getattr(self.service, "crawler", None)
        if crawler is None or getattr(getattr(crawler, "policy", None), "phase", None) == HARVESTING:
            return False
        stats = crawler.stats
        if stats.finished and stats.reason == "max_pages":
            return False
        pages, now = int(stats.total_pages), trio.current_time()
        if pages != self._learning_pages:
            self._learning_pages, self._pages_moved_at = pages, now
        return now - self._pages_moved_at < 3 * self.settings.sync_interval

    async def local_model(self, topic: str) -> store.StoredModel | None:
        stored = await self.db(store.load_models, topic, "linear", store.LOCAL)
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
        return [p for p in self.network.communities.community(topic) if not self._banned(p)]

    def _banned(self, peer: str) -> bool:
        return self.ledger.is_banned(peer)

    async def announce(self) -> None:
        """Hold every topic key in the p2p layer's communities with the local model's version: gossip
        tells the topic's community (re-announced periodically for newcomers)."""
        versions = {m.topic: m.version for m in await self.db(store.load_models, None, "linear", store.LOCAL)}
        for topic in (await self.topics())[:64]:
            version = versions.get(topic, 0)
            if len(topic) <= 128 and self._announced.get(topic) != version:
                await self.network.announce_version(topic, version)
                self._announced[topic] = version

    # -- model exchange -----------------------------------------------------------------------------------
    async def _serve_model(self, topic: str, version: int | None) -> SignedModel | None:
        offered = await self._offered(topic)
        if offered is None or (version is not None and offered.payload.version != version):
            return None
        return offered

    def _wants_model(self, topic: str, peer: str, version: int) -> bool:
        """An announced model is fetched only when its version is newer than the one held and no fetch of
        the peer's model is under way (a newer version missed meanwhile comes with a re-announcement)."""
        if self._banned(peer) or version <= self._held.get((topic, peer), 0):
            return False
        if self._pending(topic, peer) is not None:
            return False
        self._expect(topic, peer)
        return True

    def _pending(self, topic: str, peer: str) -> trio.Event | None:
        """The arrival of the peer's model while a fetch of it is under way (and not timed out)."""
        entry = self._inflight.get((topic, peer))
        if entry is None or entry[1].is_set() or trio.current_time() > entry[0]:
            return None
        return entry[1]

    def _expect(self, topic: str, peer: str) -> trio.Event:
        arrival = trio.Event()
        self._inflight[(topic, peer)] = (trio.current_time() + self.settings.request_timeout, arrival)
        return arrival

    def _arrived(self, topic: str, peer: str) -> None:
        entry = self._inflight.pop((topic, peer), None)
        if entry is not None:
            entry[1].set()

    def checked_model(
        self, peer: str, signed: SignedModel | None, topic: str, kind: str, max_rows: int = 1
    ) -> SignedModel | None:
        """A peer's model after signature, origin, kind, feature space and size checks; None (and a
        counted rejection) if bad. A model of another feature space had passed, and measuring it failed
        every cooperation round of the node; a centroid model of 256 rows of 2**24 features took 4.4 GB
        to expand before it was refused."""
        if signed is None:
            return None
        try:
            payload = verify_model(signed)
            if payload.origin != peer:
                raise WireError("wrong_origin", "a peer may only send its own models")
            if payload.topic != topic or payload.kind != kind:
                raise WireError("bad_model", f"asked for a {kind} model of {topic!r}")
            if payload.rows > max_rows:
                raise WireError("bad_model", f"{payload.rows} rows where at most {max_rows} were asked for")
            if feature_config_of(payload) != self.featurizer.config:
                raise WireError("bad_model", "its feature space is not this node's (another version?)")
            if kind == "linear":
                linear_from_payload(payload)
            else:
                centroids_from_payload(payload)
        except WireError as error:
            self.protocols.guard.reject(peer, error)
            return None
        return signed

    async def _on_announced_model(self, signed: SignedModel, peer: str) -> None:
        """The p2p layer fetched an announced model (signature and origin checked): keep it if it is ours."""
        topic = signed.payload.topic
        if topic in await self.topics() and await self._keep(peer, signed, topic) is not None:
            self._stale.add(topic)

    async def _keep(self, peer: str, signed: SignedModel | None, topic: str) -> SignedModel | None:
        """Check, measure and store a peer's linear model of a topic."""
        signed = self.checked_model(peer, signed, topic, "linear")
        if signed is None:
            return None
        member = await self.work(self._measure_received, signed)
        if self.ledger.is_blocked(peer):  # blocked while it was measured: `forget_peer` has run or will
            return None
        await self.db(
            store.save_model,
            signed,
            store.RECEIVED,
            accuracy=member.accuracy,
            evaluated=member.evaluated,
            weight=member.weight,
        )
        self._held[(topic, peer)] = max(signed.payload.version, self._held.get((topic, peer), 0))
        self._arrived(topic, peer)
        self.publish(
            "model",
            {"topic": topic, "origin": peer, "version": signed.payload.version, "weight": member.weight},
        )
        return signed

    async def fetch_model(self, peer: str, topic: str) -> SignedModel | None:
        """Fetch, check, measure and store a peer's latest model of a topic; while a fetch of it is already
        under way, wait for that one instead of transferring the model twice."""
        pending = self._pending(topic, peer)
        if pending is not None:
            with trio.move_on_after(self.settings.request_timeout):
                await pending.wait()
            return await self._held_model(topic, peer)
        arrival = self._expect(topic, peer)
        try:
            return await self._keep(peer, await self.protocols.fetch_model(peer, topic), topic)
        finally:
            if self._inflight.get((topic, peer), (0, None))[1] is arrival:
                self._arrived(topic, peer)

    async def _held_model(self, topic: str, peer: str) -> SignedModel | None:
        for stored in await self.db(store.load_models, topic, "linear", store.RECEIVED):
            if stored.origin == peer:
                return stored.model
        return None

    def _measure_received(self, signed: SignedModel) -> learning.Member:
        payload = signed.payload
        data = self._labelled(payload.topic)
        return learning.received_member(payload.origin, payload.version, linear_from_payload(payload), data)

    async def fetch_models(self) -> int:
        """Fetch the model of every community peer this node holds none of (newer versions arrive through
        announcements); a peer without one is asked again after a growing number of rounds."""
        fetched = 0
        for topic in await self.topics():
            for peer in self.community(topic):
                backoff = self._asked.setdefault((peer, topic), Backoff())
                if (topic, peer) in self._held or self.rounds < backoff.skip_until:
                    continue
                if self._pending(topic, peer) is not None:  # announced: the p2p layer fetches it
                    continue
                try:
                    signed = await self.fetch_model(peer, topic)
                except P2PError as exc:
                    log.info("model fetch: %s", exc)
                    signed = None
                if signed is None:
                    backoff.idle(self.rounds, self.settings.max_backoff_rounds)
                    continue
                fetched += 1
                self._stale.add(topic)
        return fetched

    async def gather_reports(self) -> list[str]:
        """Ask each topic's community to cross-validate the topic's models on their data (the estimate
        phase of METAREQUEST, 3.15) whenever the models held changed since the last reports and then
        stayed the same for a round (models of a community arrive over several rounds: one estimate for
        them all), unless this node measured each of them itself on enough documents; and rebuild the
        meta-classifier with the weights they give; returns the topics asked about."""
        held = await self._held_versions()
        asked = []
        for topic in await self.topics():
            community = self.community(topic)[: self.settings.max_meta_peers - 1]
            versions = held.get(topic, ())
            settled = self._held_before.get(topic) == versions
            self._held_before[topic] = versions
            if not community or len(versions) < 2 or self._reported.get(topic) == versions or not settled:
                continue
            if await self._measured_here(topic):
                continue
            participants = (self.peer_id, *community)
            if self._estimated(topic, versions, participants):
                self._reported[topic] = versions  # a meta build asked about exactly these models already
                continue
            session = secrets.token_hex(8)
            loss = self.settings.default_loss
            reports = await self._estimate(topic, session, loss, None, community, participants)
            self._record_reports(topic, reports)
            self._reported[topic] = versions
            self._estimates[topic] = (versions, frozenset(participants), reports)
            await self.rebuild_meta(topic)
            asked.append(topic)
        return asked

    def _estimated(self, topic: str, versions: Any, participants: Sequence[str]) -> bool:
        """Whether the last estimate phase of the topic, a round's or a meta build's, covered exactly
        these model versions and participants: cross-validation does not depend on the loss, so its
        reports serve again (a round after a build asked the community the same a second time, 6 of
        devweb's 12 estimate sessions, about 26 KB)."""
        cached = self._estimates.get(topic)
        return cached is not None and cached[:2] == (versions, frozenset(participants))

    async def _measured_here(self, topic: str) -> bool:
        """Whether this node measured every model of the topic on enough of its own documents: their
        weights then rest on its own data (`learning.community_weight`) and reports would change nothing."""
        rows = await self.db(store.model_rows, topic)
        linear = [r for r in rows if r["kind"] == "linear"]
        return bool(linear) and all(r["evaluated"] >= learning.ROBUST.min_evaluated for r in linear)

    async def _held_versions(self) -> dict[str, tuple[tuple[str, int], ...]]:
        """topic -> the (origin, version) of every linear model held, local one included, sorted."""
        held: dict[str, list[tuple[str, int]]] = {}
        for m in await self.db(store.load_models, None, "linear"):
            held.setdefault(m.topic, []).append((m.origin, m.version))
        return {topic: tuple(sorted(pairs)) for topic, pairs in held.items()}

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
    def _members(
        self,
        topic: str,
        origins: Sequence[str] | None = None,
        data: learning.LabelledData | None = None,
    ) -> list[learning.Member]:
        """The local model and the received ones (all, or those of `origins`), weighed on local data (the
        topic's labelled documents, read here unless the caller has them)."""
        data = data if data is not None else self._labelled(topic)
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
        data = self._labelled(topic)
        members = self._members(topic, origins, data)
        if not members:
            return None
        previous = store.load_meta(self.repo, topic)
        loss = loss if loss is not None else previous["loss"] if previous else self.settings.default_loss
        self._built_on[topic] = learning.own_document_count(self._thread_repo())
        unlabelled = learning.own_documents(self._thread_repo(), self.featurizer)
        claimed = learning.rival_claims(self._metas, topic, unlabelled)
        meta = learning.meta_classifier(members, unlabelled, data, loss, claimed)
        scores = learning.meta_scores(meta, data.X)
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
        verdicts = self._apply(topic, loss)
        self._reapply_rivals(topic)
        return {
            "meta": meta,
            "members": members,
            "measured": learning.decision_accuracy(scores, data.labels, loss),
            **verdicts,
        }

    def _apply(self, topic: str, loss: float) -> dict[str, int]:
        """Verdicts for the topic's documents by `learning.filtering_scores` at the loss; how many of each."""
        docs = learning.topic_documents(self.repo, topic)
        if docs.doc_ids.size == 0:
            store.save_meta(self.repo, topic, loss=loss)
            return {"kept": 0, "rejected": 0, "abstained": 0}
        rivals = self._filtering_metas(topic)
        scores = learning.filtering_scores(rivals, topic, self.featurizer.transform(list(docs.texts)))
        decisions = loss_targeted_decisions(scores, loss)
        self._cutoffs[topic] = (rivals, loss, learning.abstain_cutoff(scores, decisions))
        verdicts = learning.write_verdicts(self.repo, docs.doc_ids, decisions)
        store.save_meta(self.repo, topic, loss=loss)  # counts: the documents' verdicts
        return verdicts

    def _filtering_metas(self, topic: str) -> dict[str, MetaClassifier]:
        """The meta-classifiers filtering the topic reads: its own and its rival topics'."""
        rivals = learning.rival_topics(topic, self._metas)
        return {t: self._metas[t] for t in [topic, *rivals]}

    def _reapply_rivals(self, topic: str) -> None:
        """Filter again the topics a new meta-classifier of `topic` competes with (`learning.rivalled_by`)."""
        for rivalled in learning.rivalled_by(topic, self._metas):
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
        docs = learning.topic_documents(self.repo, topic, unjudged=True)
        if docs.doc_ids.size:
            scores = learning.filtering_scores(rivals, topic, self.featurizer.transform(list(docs.texts)))
            learning.write_verdicts(self.repo, docs.doc_ids, learning.cutoff_decisions(scores, known[2]))

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
        now = learning.own_document_count(repo)
        return [topic for topic, then in self._built_on.items() if now >= REBUILD_GROWTH * max(then, 1)]

    async def rebuild_meta(self, topic: str) -> None:
        """The node's meta-classifier over every model it holds for the topic (thesis 3.3.2: Meta_i)."""
        await self.work(self._build, topic, None, None)
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
            own = await self.db(learning.own_document_count)
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
        return learning.meta_scores(meta, self.featurizer.transform(list(texts)))

    async def build_meta(
        self, topic: str, loss: float | None = None, error_goal: float | None = None
    ) -> dict[str, Any]:
        """The distributed meta-classifier protocol (thesis figures 3.5 and 3.6), as the initiator. Without
        a `loss`, the topic's loss as the user last set it, else `cooperation.default_loss`; without an
        `error_goal`, the configured `cooperation.error_goal` (0: none)."""
        if error_goal is None and self.settings.error_goal > 0:
            error_goal = self.settings.error_goal
        if loss is None:
            previous = await self.db(store.load_meta, topic)
            loss = float(previous["loss"]) if previous else self.settings.default_loss
        if not 0.0 <= loss < 1.0 or (error_goal is not None and not 0.0 < error_goal < 1.0):
            raise ValueError("loss must lie in [0, 1) and error_goal in (0, 1)")
        known = await self.topics()
        if topic not in known:
            raise KeyError(unknown_topic(topic, known, listed=TOPICS_LISTED_API))
        if await self.local_model(topic) is None:
            await self.refresh_local_models(now=True)
        community = self.community(topic)[: self.settings.max_meta_peers - 1]
        session = secrets.token_hex(8)
        participants = (self.peer_id, *community)
        versions = (await self._held_versions()).get(topic, ())
        if self._estimated(topic, versions, participants):
            reports = self._estimates[topic][2]  # the community cross-validated these models already
        elif error_goal is None and await self._measured_here(topic):
            # a loss goal alone asks every honest peer, and every weight rests on this node's own
            # measurement: the community's estimates would change nothing but the predicted figures
            reports = []
        else:
            reports = await self._estimate(topic, session, loss, error_goal, community, participants)
            self._record_reports(topic, reports)
            self._estimates[topic] = (versions, frozenset(participants), reports)
        accuracies = await self.work(self._accuracies, topic)
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
        chosen = learning.meta_candidates(community, accuracies)[: max(0, needed - 1)]
        used = await self._collect(topic, session, loss, error_goal, chosen)
        built = await self.work(self._build, topic, used, loss)
        if built is None:
            raise ValueError(f"topic {topic!r} has no model yet: import training documents for it first")
        answer = {
            "topic": topic,
            "peers_used": len(used),
            "peers_needed": needed,
            "predicted": predicted_figures(honest, mean_accuracy, covariance, 1 + len(used)),
            "measured": {"accuracy": built["measured"]},
            **{key: built[key] for key in VERDICT_KEYS},
        }
        await self.db(store.save_meta, topic, build=answer)
        self.publish("meta", answer)
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
                cv, cov = await self.protocols.meta_request(peer, request)
            except P2PError as exc:
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
        this node included; 0 for a held model without a say (vetoed here, or not calibratable); no entry
        for a held model nobody could measure (the build weighs it on the node's own documents)."""
        accuracies: dict[str, float] = {}
        newest: dict[str, int] = {}
        for (origin, version), votes in self._reports.get(topic, {}).items():
            if origin == self.peer_id or version < newest.get(origin, 0):
                continue
            aggregate = robust_cross_accuracy(votes, learning.MIN_REPORT)
            if aggregate is not None:
                accuracies[origin], newest[origin] = aggregate[0], version
        for member in self._members(topic):
            if member.local:
                continue
            if member.scaler is None:
                accuracies[member.origin] = 0.0
            elif member.community_accuracy is not None:
                accuracies[member.origin] = member.community_accuracy
            else:
                accuracies.pop(member.origin, None)
        return accuracies

    async def _collect(
        self, topic: str, session: str, loss: float, goal: float | None, chosen: Sequence[str]
    ) -> list[str]:
        """METAREQUEST "build" to the chosen peers; their classifiers are checked and stored. A request
        names the peer's model this node holds, so a peer whose classifier it is names its version instead."""
        held = {
            m.origin: m.version for m in await self.db(store.load_models, topic, "linear", store.RECEIVED)
        }
        used: list[str] = []

        async def ask(peer: str) -> None:
            # each peer is told only about its own classifier: the others' references are ~60 bytes each
            # it cannot use
            refs = (HeldModel(peer, held[peer]),) if peer in held else ()
            request = MetaRequest(session, topic, self.peer_id, "build", loss, goal, (), refs)
            try:
                (offer,) = await self.protocols.meta_request(peer, request)
            except P2PError as exc:
                log.info("meta build: %s", exc)
                return
            if offer.model is None:  # type: ignore[attr-defined]
                used.append(peer)  # the version held (checked by the protocol)
                return
            signed = self.checked_model(peer, offer.model, topic, "linear")  # type: ignore[attr-defined]
            if signed is None:
                return
            await self._keep(peer, signed, topic)
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
            version = offered.payload.version
            if HeldModel(self.peer_id, version) in request.held:
                return [MetaClassifierOffer(request.session, None, version)]
            return [MetaClassifierOffer(request.session, offered)]
        models: dict[str, LinearModel] = {}
        versions: dict[str, int] = {}
        held = {
            m.origin: m for m in await self.db(store.load_models, request.topic, "linear", store.RECEIVED)
        }
        # each participant once, and at most max_meta_peers of them fetched: a request naming one honest
        # peer 254 times had this node fetch its model 254 times, and that peer banned this node
        fetches = self.settings.max_meta_peers
        for origin in dict.fromkeys(request.participants):
            if origin == self.peer_id:
                continue
            stored = held.get(origin)
            signed = stored.model if stored else None
            if signed is None and origin in self.known_peers() and fetches > 0:
                fetches -= 1
                try:
                    signed = await self.fetch_model(origin, request.topic)
                except P2PError:
                    signed = None
            if signed is not None:
                models[origin] = linear_from_payload(signed.payload)
                versions[origin] = signed.payload.version
        cv_entries, cov_entries = await self.work(self._cross_validate, request.topic, models, versions)
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
        row = await self.db(store.load_meta, topic)
        if row is None:
            raise KeyError(f"no meta-classifier for {topic!r} yet: build one with POST /api/meta/build")
        return {
            "topic": topic,
            "loss": row["loss"],
            "curve": row["curve"],
            **await self.db(learning.verdict_counts, topic),
            "models": row["members"],
            "combination": learning.combination(row["model"], row["members"] or []),
            "rival_topics": learning.rival_topics(topic, self._metas),
            "build": row["build"],
        }

    async def set_loss(self, topic: str, loss: float) -> dict[str, Any]:
        """Restrictive filtering of the topic's documents at the user's loss; verdicts stored per document.
        The meta-classifier is built again for that loss: which of the community's models may vote depends
        on it (`learning.accepts_beyond_the_loss`)."""
        if not 0.0 <= loss < 1.0:
            raise ValueError("loss must lie in [0, 1)")
        row = await self.db(store.load_meta, topic)
        if topic not in self._metas or row is None or row["loss"] != loss:
            built = await self.work(self._build, topic, self._built_from(row), loss)
            if built is None:
                raise KeyError(f"no meta-classifier for {topic!r}: the topic has no model yet")
            verdicts = {key: built[key] for key in VERDICT_KEYS}
            row = await self.db(store.load_meta, topic)  # the one built for the loss
        else:
            verdicts = await self.work(self._apply, topic, loss)
        answer = {
            "topic": topic,
            "loss": loss,
            **verdicts,
            "combination": learning.combination(row["model"], row["members"] or []),
        }
        self.publish("meta", answer)
        return answer

    @staticmethod
    def _built_from(row: dict[str, Any] | None) -> list[str] | None:
        """The peers whose models the stored meta-classifier was built from (None: every model held)."""
        if row is None or not row["members"]:
            return None
        return [m["origin"] for m in row["members"] if m["origin"] != "local"]

    async def topic_quality(self, topic: str) -> dict[str, Any]:
        row = await self.db(store.load_meta, topic)
        local = await self.local_model(topic)
        accuracy = None
        if row is not None:
            accuracy = next((p["accuracy"] for p in row["curve"] if p["loss"] == row["loss"]), None)
        return {"quality": {"accuracy": accuracy}, "model_version": local.version if local else None}

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
        for memory in (self._held, self._inflight):
            for key in [key for key in memory if key[1] == peer]:
                del memory[key]
        for key in [key for key in self._asked if key[0] == peer]:
            del self._asked[key]
        self.results.forget(peer)
        for reports in self._reports.values():
            for model in list(reports):
                if model[0] == peer:
                    del reports[model]
                else:
                    reports[model].pop(peer, None)
        self._estimates.clear()
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


def predicted_figures(honest: Sequence[float], accuracy: float, covariance: float, k: int) -> dict[str, Any]:
    """The estimate of k unanimous models from the measured accuracies better than chance (`honest`) and
    their mean covariance; none, and why, when no model's accuracy was measured (it printed accuracy 0.5
    at loss 0.5, the figures of a coin)."""
    if not honest:
        why = (
            "no model's accuracy could be measured: too few labelled documents the models were not trained on"
        )
        return {"loss": None, "accuracy": None, "why": why}
    predicted = exchangeable_agreement(accuracy, max(covariance, 0.0), k)
    return {"loss": predicted.loss, "accuracy": learning.finite_or_none(predicted.accuracy)}


def _same_models(a: Mapping[str, MetaClassifier], b: Mapping[str, MetaClassifier]) -> bool:
    """The same topics with the very same meta-classifier objects (a rebuild makes a new one)."""
    return a.keys() == b.keys() and all(a[t] is b[t] for t in a)
