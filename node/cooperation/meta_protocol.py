"""The distributed meta-classifier protocol of thesis figures 3.5/3.6 (METAREQUEST).

As the initiator (`build`): "estimate" to the community (each peer cross-validates the others' classifiers on
its data without their training documents and returns errors and covariances), the peer-count estimate for
the user's goal, "build" to the chosen peers (each sends its classifier), and the meta-classifier over the
collected models (`Cooperation.combine`). A build over the same models and peers as the last estimate phase
reuses its reports; a build for a loss goal alone skips the estimate when this node measured every model
itself on enough documents. The same estimate phase runs in the cooperation rounds once the models held
changed and then stayed the same for a round (`gather_reports`), so the meta-classifier the crawler uses
between builds is weighed by the community too.

As a contacted peer (`answer`): its own classifier for "build"; for "estimate", the cross-validation of the
participants' classifiers on its labelled documents (3.15-3.16).
"""

from __future__ import annotations

import itertools
import logging
import math
import secrets
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import trio

from crawler.taxonomy import TOPICS_LISTED_API, unknown_topic
from metamodels.estimators import (
    MetaEstimate,
    correctness_covariance,
    exchangeable_agreement,
    peers_needed,
    robust_cross_accuracy,
)
from metamodels.linear import LinearModel
from node.cooperation import filtering, store, weighing
from node.cooperation.part import LayerPart
from node.cooperation.wiremodels import linear_from_payload
from node.wording import counted
from p2p.errors import P2PError, WireError
from p2p.messages.meta_classifier import (
    CovarianceReport,
    CovEntry,
    CrossValidationReport,
    CvEntry,
    HeldModel,
    MetaClassifierOffer,
    MetaRequest,
)

if TYPE_CHECKING:
    from node.cooperation.service import Cooperation

log = logging.getLogger(__name__)


class MetaProtocol(LayerPart):
    """The meta-classifier protocol of one node's cooperation layer (`Cooperation.meta_protocol`)."""

    def __init__(self, layer: Cooperation) -> None:
        super().__init__(layer)
        # topic -> (model origin, version) -> reporter -> (correct, evaluated): the community's
        # cross-validation reports (3.15), the newest per reporter; and the model versions they were for
        self.reports: dict[str, dict[tuple[str, int], dict[str, tuple[int, int]]]] = {}
        self._reported: dict[str, tuple[tuple[str, int], ...]] = {}
        # topic -> (models held, participants, their reports) of the last estimate phase: a meta build
        # over the same models and peers reuses it (cross-validation does not depend on the loss)
        self._estimates: dict[str, tuple[Any, frozenset[str], list[Any]]] = {}
        self._held_before: dict[str, tuple[tuple[str, int], ...]] = {}  # models held at the last round

    def forget(self, peer: str) -> None:
        """A blocked peer's reports and the reports on its models no longer count."""
        for reports in self.reports.values():
            for model in list(reports):
                if model[0] == peer:
                    del reports[model]
                else:
                    reports[model].pop(peer, None)
        self._estimates.clear()

    async def build(
        self, topic: str, loss: float | None = None, error_goal: float | None = None
    ) -> dict[str, Any]:
        """The distributed meta-classifier protocol (thesis figures 3.5 and 3.6), as the initiator. Without
        a `loss`, the topic's loss as the user last set it, else `cooperation.default_loss`; without an
        `error_goal`, the configured `cooperation.error_goal` (0: none)."""
        async with self.layer.user_first():  # a round running meanwhile waits for it
            return await self._build(topic, loss, error_goal)

    async def _build(self, topic: str, loss: float | None, error_goal: float | None) -> dict[str, Any]:
        if error_goal is None and self.settings.error_goal > 0:
            error_goal = self.settings.error_goal
        if loss is None:
            previous = await self.layer.db(store.load_meta, topic)
            loss = float(previous["loss"]) if previous else self.settings.default_loss
        if not 0.0 <= loss < 1.0 or (error_goal is not None and not 0.0 < error_goal < 1.0):
            raise ValueError("loss must lie in [0, 1) and error_goal in (0, 1)")
        known = await self.layer.topics()
        if topic not in known:
            raise KeyError(unknown_topic(topic, known, listed=TOPICS_LISTED_API))
        if await self.layer.exchange.local_model(topic) is None:
            await self.layer.exchange.refresh_local_models(now=True)
            self.layer.stale.discard(topic)  # built below, with its peers
            await self.layer.rebuild_stale()  # its rival topics' meta-classifiers, which its filter reads
        community = self.layer.community(topic)[: self.settings.max_meta_peers - 1]
        session = secrets.token_hex(8)
        participants = (self.layer.peer_id, *community)
        versions = (await self._held_versions(topic)).get(topic, ())
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
        accuracies = await self.layer.work(self._accuracies, topic)
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
        wanted = models_wanted(estimate, error_goal, len(participants))
        needed = wanted if wanted is not None else len(participants)
        chosen = weighing.meta_candidates(community, accuracies)[: max(0, needed - 1)]
        used = await self._collect(topic, session, loss, error_goal, chosen)
        built = await self.layer.work(self.layer.combine, topic, used, loss)
        if built is None:
            raise ValueError(await self._no_model(topic))
        answer = {
            "topic": topic,
            "peers_used": len(used),
            # peers, as in peers_used: counting the own model too, a build whose own model met the goal
            # said "peers_needed 1, peers_used 0", as if a peer were missing
            "peers_needed": None if wanted is None else wanted - 1,
            "error_goal": error_goal,
            "predicted": predicted_figures(honest, mean_accuracy, covariance, 1 + len(used)),
            "measured": {"accuracy": built["measured"]},
            **{key: built[key] for key in filtering.VERDICT_KEYS},
        }
        await self.layer.db(store.save_meta, topic, build=answer)
        self.layer.publish("meta", answer)
        return answer

    async def _no_model(self, topic: str) -> str:
        """Why a build found no model of the topic, and what gives it one: the local model needs
        `min_training_docs` positive training documents and a negative one (a refinement's subtopic once
        had none at all, and the advice "import training documents" sent its user to a re-import)."""
        data = await self.layer.work(self.layer.labelled, topic)
        needed = self.settings.min_training_docs
        if data.positives < needed:
            lacking = (
                f"it has {counted(data.positives, 'positive training document')} and a model needs {needed}"
            )
            how = "import bookmarks for it, or mark pages of it relevant (`topicswarm feedback DOC relevant`)"
        else:
            lacking = "every training document of the node is a positive of it"
            how = "import other topics, or mark pages irrelevant (`topicswarm feedback DOC irrelevant`)"
        return f"topic {topic!r} has no model yet: {lacking}: {how}"

    async def _estimate(
        self,
        topic: str,
        session: str,
        loss: float,
        goal: float | None,
        community: Sequence[str],
        participants: Sequence[str],
    ) -> list[tuple[CrossValidationReport, CovarianceReport]]:
        request = MetaRequest(session, topic, self.layer.peer_id, "estimate", loss, goal, tuple(participants))
        reports: list[tuple[CrossValidationReport, CovarianceReport]] = []

        async def ask(peer: str) -> None:
            try:
                cv, cov = await self.layer.protocols.meta_request(peer, request)
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
        """acc(m) per model's origin (3.15): the robust aggregate over the reporters that tested its newest
        model, this node included; 0 for a held model without a say (vetoed here, or not calibratable); no
        entry for a held model nobody could measure (the build weighs it on the node's own documents). The
        node's own model is there under its peer id: the estimate takes the models combined at their mean
        accuracy and the own model is always one of them (without it, peers' models better than the own
        one had the own model alone judged enough for an error goal)."""
        accuracies: dict[str, float] = {}
        newest: dict[str, int] = {}
        for (origin, version), votes in self.reports.get(topic, {}).items():
            if origin == self.layer.peer_id or version < newest.get(origin, 0):
                continue
            aggregate = robust_cross_accuracy(votes, weighing.MIN_REPORT)
            if aggregate is not None:
                accuracies[origin], newest[origin] = aggregate[0], version
        for member in self.layer.members(topic):
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
            m.origin: m.version
            for m in await self.layer.db(store.load_models, topic, "linear", store.RECEIVED)
        }
        used: list[str] = []

        async def ask(peer: str) -> None:
            # each peer is told only about its own classifier: the others' references are ~60 bytes each
            # it cannot use
            refs = (HeldModel(peer, held[peer]),) if peer in held else ()
            request = MetaRequest(session, topic, self.layer.peer_id, "build", loss, goal, (), refs)
            try:
                (offer,) = await self.layer.protocols.meta_request(peer, request)
            except P2PError as exc:
                log.info("meta build: %s", exc)
                return
            if offer.model is None:  # type: ignore[attr-defined]
                used.append(peer)  # the version held (checked by the protocol)
                return
            signed = self.layer.exchange.checked_model(peer, offer.model, topic, "linear")  # type: ignore[attr-defined]
            if signed is None:
                return
            await self.layer.exchange.keep(peer, signed, topic)
            used.append(peer)

        async with trio.open_nursery() as nursery:
            for peer in chosen:
                nursery.start_soon(ask, peer)
        return sorted(used)

    async def answer(self, peer: str, request: MetaRequest) -> list[Any]:
        if request.initiator != peer:
            raise WireError("wrong_origin", "the initiator must send its own METAREQUEST")
        if request.phase == "build":
            offered = await self.layer.exchange.offered(request.topic)
            if offered is None:
                raise WireError("no_model", f"no model of {request.topic!r} here")
            version = offered.payload.version
            if HeldModel(self.layer.peer_id, version) in request.held:
                return [MetaClassifierOffer(request.session, None, version)]
            return [MetaClassifierOffer(request.session, offered)]
        models: dict[str, LinearModel] = {}
        versions: dict[str, int] = {}
        held = {
            m.origin: m
            for m in await self.layer.db(store.load_models, request.topic, "linear", store.RECEIVED)
        }
        # each participant once, and at most max_meta_peers of them fetched: a request naming one honest
        # peer 254 times had this node fetch its model 254 times, and that peer banned this node
        fetches = self.settings.max_meta_peers
        for origin in dict.fromkeys(request.participants):
            if origin == self.layer.peer_id:
                continue
            stored = held.get(origin)
            signed = stored.model if stored else None
            if signed is None and origin in self.layer.known_peers() and fetches > 0:
                fetches -= 1
                try:
                    signed = await self.layer.exchange.fetch_model(origin, request.topic)
                except P2PError:
                    signed = None
            if signed is not None:
                models[origin] = linear_from_payload(signed.payload)
                versions[origin] = signed.payload.version
        cv_entries, cov_entries = await self.layer.work(self._cross_validate, request.topic, models, versions)
        return [
            CrossValidationReport(request.session, request.topic, self.layer.peer_id, cv_entries),
            CovarianceReport(request.session, request.topic, self.layer.peer_id, cov_entries),
        ]

    def _cross_validate(
        self, topic: str, models: dict[str, LinearModel], versions: dict[str, int]
    ) -> tuple[tuple[CvEntry, ...], tuple[CovEntry, ...]]:
        """Errors of the other peers' classifiers on this node's data without their training documents,
        and the covariances of their correctness on documents neither was trained on (3.15-3.16)."""
        data = self.layer.labelled(topic)
        correct: dict[str, np.ndarray] = {}
        held: dict[str, np.ndarray] = {}
        entries = []
        for origin, model in models.items():
            right, tested, mask = weighing.measure(model, data)
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

    async def gather_reports(self) -> list[str]:
        """Ask each topic's community to cross-validate the topic's models on their data (the estimate
        phase of METAREQUEST, 3.15) whenever the models held changed since the last reports and then
        stayed the same for a round (models of a community arrive over several rounds: one estimate for
        them all), unless this node measured each of them itself on enough documents; and rebuild the
        meta-classifier with the weights they give; returns the topics asked about."""
        held = await self._held_versions()
        asked = []
        for topic in await self.layer.topics():
            community = self.layer.community(topic)[: self.settings.max_meta_peers - 1]
            versions = held.get(topic, ())
            settled = self._held_before.get(topic) == versions
            self._held_before[topic] = versions
            if not community or len(versions) < 2 or self._reported.get(topic) == versions or not settled:
                continue
            if await self._measured_here(topic):
                continue
            participants = (self.layer.peer_id, *community)
            if self._estimated(topic, versions, participants):
                self._reported[topic] = versions  # a meta build asked about exactly these models already
                continue
            session = secrets.token_hex(8)
            loss = self.settings.default_loss
            reports = await self._estimate(topic, session, loss, None, community, participants)
            self._record_reports(topic, reports)
            self._reported[topic] = versions
            self._estimates[topic] = (versions, frozenset(participants), reports)
            await self.layer.rebuild_meta(topic)
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
        weights then rest on its own data (`weighing.community_weight`) and reports would change nothing."""
        rows = await self.layer.db(store.model_rows, topic)
        linear = [r for r in rows if r["kind"] == "linear"]
        return bool(linear) and all(r["evaluated"] >= weighing.ROBUST.min_evaluated for r in linear)

    async def _held_versions(self, topic: str | None = None) -> dict[str, tuple[tuple[str, int], ...]]:
        """topic -> the (origin, version) of every linear model held, local one included, sorted (of one
        topic, or of every topic)."""
        held = await self.layer.db(store.model_versions, topic, "linear")
        return {key: tuple(sorted(pairs)) for key, pairs in held.items()}

    def _record_reports(
        self, topic: str, reports: Sequence[tuple[CrossValidationReport, CovarianceReport]]
    ) -> None:
        """Keep each reporter's newest cross-validation results; a reporter's entry on its own model is
        dropped (a model cannot vouch for itself)."""
        table = self.reports.setdefault(topic, {})
        for cv, _ in reports:
            for votes in table.values():
                votes.pop(cv.reporter, None)
            for entry in cv.entries:
                if entry.origin == cv.reporter or entry.tested <= 0:
                    continue
                correct = max(0, min(entry.tested, entry.tested - entry.errors))
                votes = table.setdefault((entry.origin, entry.model_version), {})
                votes[cv.reporter] = (correct, entry.tested)


def models_wanted(estimate: MetaEstimate | None, error_goal: float | None, participants: int) -> int | None:
    """How many models a build combines, the node's own among them: for an error goal, the fewest the
    estimate says meet it (None when no count up to the `participants` does: every honest peer is asked);
    for a loss goal alone, every participant. The estimate is for unanimous decisions, whose loss grows
    with every peer; this meta-classifier filters loss-targeted (3.4.4), which meets the loss with any
    number of peers while each further honest peer lowers the error."""
    if error_goal is None:
        return participants
    return estimate.peers if estimate is not None else None


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
    return {"loss": predicted.loss, "accuracy": finite_or_none(predicted.accuracy)}


def finite_or_none(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)
