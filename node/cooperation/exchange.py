"""Model exchange (thesis 3.3.2): each topic's local model is retrained when its training documents change,
signed and announced to the topic's community; peers' models are fetched once per version, checked
(signature, origin, kind, feature space, size), measured on this node's labelled documents and stored.

A fetch of one peer's model is never under way twice: an announcement, a first contact and a
cross-validation request share it (`pending`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import scipy.sparse as sp
import trio

from crawler.focus import HARVESTING
from metamodels.linear import LinearModel
from node.cooperation import store, training, weighing
from node.cooperation.backoff import Backoff
from node.cooperation.part import LayerPart
from node.cooperation.wiremodels import (
    centroids_from_payload,
    feature_config_of,
    flipped,
    linear_from_payload,
    linear_payload,
)
from p2p.errors import P2PError, WireError
from p2p.message_limits import MAX_TOPIC_LEN
from p2p.messages.models import SignedModel
from p2p.signing import sign_model, verify_model

if TYPE_CHECKING:
    from node.cooperation.service import Cooperation

log = logging.getLogger(__name__)


class ModelExchange(LayerPart):
    """The model half of one node's cooperation layer (`Cooperation.exchange`): its own models and its
    peers'."""

    def __init__(self, layer: Cooperation) -> None:
        super().__init__(layer)
        self._held: dict[tuple[str, str], int] = {}  # (topic, origin) -> version of the received model
        self._asked: dict[tuple[str, str], Backoff] = {}  # (peer, topic) of first-contact model fetches
        # (topic, origin) -> (deadline, arrival) of a model fetch under way, so that an announcement, a
        # first contact and a cross-validation request never fetch the same model twice at once
        self._inflight: dict[tuple[str, str], tuple[float, trio.Event]] = {}
        self._announced: dict[str, int] = {}  # topic -> model version handed to the communities
        self.unshared: list[str] = []  # topic keys too long to announce (see `announce`)
        self._learning_pages: int | None = None  # the crawler's page count at the last look
        self._pages_moved_at = 0.0  # and when it last changed (trio clock)

    async def load_held(self) -> None:
        """The versions of the received models stored by the last run: only newer ones are fetched."""
        for m in await self.layer.db(store.load_models, None, "linear", store.RECEIVED):
            self._held[(m.topic, m.origin)] = m.version

    def forget(self, peer: str) -> None:
        """A blocked peer's model versions, fetches and back-off leave memory."""
        for memory in (self._held, self._inflight):
            for key in [key for key in memory if key[1] == peer]:
                del memory[key]
        for key in [key for key in self._asked if key[0] == peer]:
            del self._asked[key]

    # -- the node's own models ----------------------------------------------------------------------------
    async def refresh_local_models(self, *, now: bool = False) -> list[str]:
        """Retrain the topics whose training documents changed; returns the topics with a new version.
        While the crawler's learning phase runs nothing is trained (unless `now`): the phase ends within
        a minute by adding archetypes to the training documents, so a model trained before would be
        replaced at once and every peer would fetch both. A retrained model that decides like the
        published one (`republish_agreement`) is not published again: the fingerprint moves on, the model
        stays."""
        if not now and self._learning():
            return []
        fingerprint = await self.layer.db(training.training_fingerprint)
        changed = []
        for topic in await self.layer.topics():
            stored = await self.layer.db(store.load_models, topic, "linear", store.LOCAL)
            if stored and stored[0].fingerprint == fingerprint:
                continue
            previous = linear_from_payload(stored[0].model.payload) if stored else None
            model = await self.layer.work(self._train, topic, previous)
            if model is None:
                continue
            if model is previous:
                await self.layer.db(store.save_model, stored[0].model, store.LOCAL, fingerprint=fingerprint)
                continue
            version = stored[0].version + 1 if stored else 1
            signed = sign_model(self.layer.key, linear_payload(model, topic, version, self.layer.peer_id))
            await self.layer.db(store.save_model, signed, store.LOCAL, fingerprint=fingerprint)
            changed.append(topic)
            self.layer.publish("model", {"topic": topic, "origin": "local", "version": version})
        # built again later in the round, after the new versions are announced: built here, 150 topics'
        # meta-classifiers held every announcement back (2 nodes exchanged 23 of 300 models in 2 minutes)
        self.layer.stale.update(changed)
        return changed

    def _train(self, topic: str, previous: LinearModel | None = None) -> LinearModel | None:
        """The topic's new local model as it is stored and shipped: its smallest weights dropped while its
        decisions on the node's own documents stay (`prune_agreement`); `previous` itself when the new
        one decides like it on enough of those documents (`republish_agreement`)."""
        data = self.layer.labelled(topic)
        model = training.train_local(data, self.settings.min_training_docs)
        if model is None:
            return None
        # the shipped model must decide like the full one on the documents it will meet: the node's crawled
        # ones, and its labelled ones (which alone count before the crawl has found enough)
        own = self.layer.own_documents()
        X = sp.vstack([own, data.X], format="csr")
        loss = self.settings.default_loss
        model = training.pruned(model, data, X, loss, self.settings.prune_agreement)
        alike = (
            previous is not None
            and X.shape[0] >= training.MIN_AGREEMENT_DOCUMENTS
            and training.decision_agreement(previous, model, X, loss) >= self.settings.republish_agreement
        )
        return previous if alike else model

    def _learning(self) -> bool:
        """Whether the node's crawler has not left its learning phase yet and is still fetching (it did not
        reach its page limit, and its page count moved within the last three rounds' time, or this is
        the first look): the training documents are about to grow. A crawler whose focus is not
        installed yet (a round between an import's storing and its focus refresh) counts as learning;
        False without a crawler."""
        crawler = getattr(self.layer.service, "crawler", None)
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
        stored = await self.layer.db(store.load_models, topic, "linear", store.LOCAL)
        return stored[0] if stored else None

    async def offered(self, topic: str) -> SignedModel | None:
        """The node's own signed model of a topic as offered to peers (label-flipped when hostile)."""
        stored = await self.local_model(topic)
        if stored is None:
            return None
        if not self.settings.hostile:
            return stored.model
        bad = flipped(linear_from_payload(stored.model.payload))
        return sign_model(self.layer.key, linear_payload(bad, topic, stored.version, self.layer.peer_id))

    async def announce(self) -> None:
        """Hold every topic key in the p2p layer's communities with the local model's version: gossip
        tells the topic's community (re-announced periodically for newcomers). A community the p2p layer is
        in for a key the node no longer holds (an import without its folder, a rename) is left.

        Every key is held, however many: each is its own gossip topic, and the p2p layer sends at most
        `announce_batch_max` announcements per pass and the rest at the next. Only the first 64 keys (in
        key order) used to be held, so a user with more folders never met the other communities, unsaid.
        A key longer than the wire allows (MAX_TOPIC_LEN characters: a deep folder path) cannot be
        announced: it is logged once and listed in `unshared` (the status says so)."""
        versions = {
            m.topic: m.version for m in await self.layer.db(store.load_models, None, "linear", store.LOCAL)
        }
        keys = await self.layer.topics()
        held = [topic for topic in keys if len(topic) <= MAX_TOPIC_LEN]
        unshared = sorted(set(keys) - set(held))
        for topic in sorted(set(unshared) - set(self.unshared)):
            log.warning(
                "topic %r is not shared with peers: its key is longer than %d characters (give it a "
                "shorter one with `topicswarm topics rename`)",
                topic,
                MAX_TOPIC_LEN,
            )
        self.unshared = unshared
        for topic in sorted(set(self.layer.network.held_topics()) - set(held)):
            await self.layer.network.leave_topic(topic)
            self._announced.pop(topic, None)
        for topic in held:
            version = versions.get(topic, 0)
            if self._announced.get(topic) != version:
                await self.layer.network.announce_version(topic, version)
                self._announced[topic] = version

    async def serve(self, topic: str, version: int | None) -> SignedModel | None:
        """The model a peer fetches: this node's own (None when it asks for a version no longer held)."""
        offered = await self.offered(topic)
        if offered is None or (version is not None and offered.payload.version != version):
            return None
        return offered

    # -- peers' models -------------------------------------------------------------------------------------
    def wants(self, topic: str, peer: str, version: int) -> bool:
        """An announced model is fetched only when its version is newer than the one held and no fetch of
        the peer's model is under way (a newer version missed meanwhile comes with a re-announcement)."""
        if self.layer.banned(peer) or version <= self._held.get((topic, peer), 0):
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
            if feature_config_of(payload) != self.layer.featurizer.config:
                raise WireError("bad_model", "its feature space is not this node's (another version?)")
            if kind == "linear":
                linear_from_payload(payload)
            else:
                centroids_from_payload(payload)
        except WireError as error:
            self.layer.protocols.guard.reject(peer, error)
            return None
        return signed

    async def on_announced(self, signed: SignedModel, peer: str) -> None:
        """The p2p layer fetched an announced model (signature and origin checked): keep it if it is ours."""
        topic = signed.payload.topic
        if topic in await self.layer.topics() and await self.keep(peer, signed, topic) is not None:
            self.layer.stale.add(topic)

    async def keep(self, peer: str, signed: SignedModel | None, topic: str) -> SignedModel | None:
        """Check, measure and store a peer's linear model of a topic."""
        signed = self.checked_model(peer, signed, topic, "linear")
        if signed is None:
            return None
        member = await self.layer.work(self._measure_received, signed)
        if self.layer.ledger.is_blocked(peer):  # blocked while it was measured: `forget_peer` has run or will
            return None
        await self.layer.db(
            store.save_model,
            signed,
            store.RECEIVED,
            accuracy=member.accuracy,
            evaluated=member.evaluated,
            weight=member.weight,
        )
        self._held[(topic, peer)] = max(signed.payload.version, self._held.get((topic, peer), 0))
        self._arrived(topic, peer)
        self.layer.publish(
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
            return await self.keep(peer, await self.layer.protocols.fetch_model(peer, topic), topic)
        finally:
            if self._inflight.get((topic, peer), (0, None))[1] is arrival:
                self._arrived(topic, peer)

    async def _held_model(self, topic: str, peer: str) -> SignedModel | None:
        for stored in await self.layer.db(store.load_models, topic, "linear", store.RECEIVED):
            if stored.origin == peer:
                return stored.model
        return None

    def _measure_received(self, signed: SignedModel) -> weighing.Member:
        payload = signed.payload
        data = self.layer.labelled(payload.topic)
        return weighing.received_member(payload.origin, payload.version, linear_from_payload(payload), data)

    async def fetch_models(self) -> int:
        """Fetch the model of every community peer this node holds none of (newer versions arrive through
        announcements); a peer without one is asked again after a growing number of rounds."""
        fetched = 0
        for topic in await self.layer.topics():
            for peer in self.layer.community(topic):
                backoff = self._asked.setdefault((peer, topic), Backoff())
                if (topic, peer) in self._held or self.layer.rounds < backoff.skip_until:
                    continue
                if self._pending(topic, peer) is not None:  # announced: the p2p layer fetches it
                    continue
                try:
                    signed = await self.fetch_model(peer, topic)
                except P2PError as exc:
                    log.info("model fetch: %s", exc)
                    signed = None
                if signed is None:
                    backoff.idle(self.layer.rounds, self.settings.max_backoff_rounds)
                    continue
                fetched += 1
                self.layer.stale.add(topic)
        return fetched
