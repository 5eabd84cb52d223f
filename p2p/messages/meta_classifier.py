"""The meta-classifier protocol (thesis figs. 3.5/3.6): METAREQUEST, the classifiers offered for a session,
the cross-validation and covariance reports of the estimation phase, and the initiator's final meta model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from p2p.message_limits import (
    KIB,
    MAX_ABS_FLOAT,
    MAX_CURSOR,
    MAX_META_MEMBERS,
    MAX_PARTICIPANTS,
    MAX_REPORT_ENTRIES,
    MAX_VERSION,
    META_PHASES,
    MIB,
)
from p2p.messages.envelope import FieldReader, Message, record_check
from p2p.messages.models import SignedModel
from p2p.value_checks import (
    check_float,
    check_int,
    check_peer_id,
    check_seq,
    check_session,
    check_str,
    check_topic,
    fail,
)


# ---------------------------------------------------------------- meta-model protocol (fig. 3.5/3.6)
@dataclass(frozen=True)
class HeldModel:
    """A model the initiator of a meta session already holds, so a peer offers it by reference."""

    origin: str
    model_version: int

    def to_wire(self) -> dict[str, Any]:
        return {"origin": self.origin, "model_version": self.model_version}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
        )


@dataclass(frozen=True)
class MetaRequest(Message):
    """METAREQUEST. Phase "estimate": exchange classifiers with `participants`, cross-validate and report
    errors and covariances to the initiator (fig. 3.6, participants given). Phase "build": send the own
    classifier to the initiator (fig. 3.6, participants null). `held` lists the (origin, version) pairs the
    initiator already holds: a peer whose classifier is among them offers it by reference, not again."""

    TYPE: ClassVar[str] = "meta_request"
    MAX_FRAME: ClassVar[int] = 64 * KIB
    session: str
    topic: str
    initiator: str
    phase: str
    goal_loss: float
    goal_error: float | None = None
    participants: tuple[str, ...] = ()
    held: tuple[HeldModel, ...] = ()

    def body(self) -> dict[str, Any]:
        body = {
            "session": self.session,
            "topic": self.topic,
            "initiator": self.initiator,
            "phase": self.phase,
            "goal_loss": float(self.goal_loss),
            "goal_error": None if self.goal_error is None else float(self.goal_error),
            "participants": list(self.participants),
        }
        if self.held:
            body["held"] = [h.to_wire() for h in self.held]
        return body

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        phase = f.get("phase", check_str, 16)
        if phase not in META_PHASES:
            raise fail("bad_value", "meta_request.phase", f"{phase!r} not one of {META_PHASES}")
        return cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            initiator=f.get("initiator", check_peer_id),
            phase=phase,
            goal_loss=f.get("goal_loss", check_float, 0.0, 1.0),
            goal_error=f.optional("goal_error", check_float, 0.0, 1.0),
            participants=f.get("participants", check_seq, MAX_PARTICIPANTS, check_peer_id),
            held=f.optional("held", check_seq, MAX_PARTICIPANTS, record_check(HeldModel)) or (),
        )


@dataclass(frozen=True)
class MetaClassifierOffer(Message):
    """A peer's classifier for a meta session, with the IDs (not contents) of its training documents
    inside the signed model so receivers can cross-validate on D_b - D_a (thesis 3.15). When the initiator
    holds that classifier already (`MetaRequest.held`), `model` is None and `model_version` names it."""

    TYPE: ClassVar[str] = "meta_offer"
    MAX_FRAME: ClassVar[int] = 16 * MIB
    session: str
    model: SignedModel | None
    model_version: int = 0

    def __post_init__(self) -> None:
        if self.model is not None and not self.model_version:
            object.__setattr__(self, "model_version", self.model.payload.version)

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"session": self.session, "model_version": self.model_version}
        if self.model is not None:
            body["model"] = self.model.to_wire()
        return body

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        model = f.optional("model", record_check(SignedModel))
        version = f.optional("model_version", check_int, 1, MAX_VERSION)
        if model is None and version is None:
            raise fail("missing_field", "meta_offer", "an offer needs a model or the version it references")
        if model is not None and version is not None and version != model.payload.version:
            raise fail("bad_value", "meta_offer.model_version", "differs from the model's version")
        return cls(
            session=f.get("session", check_session),
            model=model,
            model_version=version or (model.payload.version if model else 0),
        )


@dataclass(frozen=True)
class CvEntry:
    """How one peer's classifier did on the reporter's held-out documents."""

    origin: str
    model_version: int
    tested: int
    errors: int

    @property
    def error(self) -> float:
        return self.errors / self.tested if self.tested else 0.0

    def to_wire(self) -> dict[str, Any]:
        return {
            "origin": self.origin,
            "model_version": self.model_version,
            "tested": self.tested,
            "errors": self.errors,
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        entry = cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
            tested=f.get("tested", check_int, 0, MAX_CURSOR),
            errors=f.get("errors", check_int, 0, MAX_CURSOR),
        )
        if entry.errors > entry.tested:
            raise fail("bad_value", "cv entry", f"{entry.errors} errors out of {entry.tested} tested")
        return entry


@dataclass(frozen=True)
class _PeerReport(Message):
    """What a contacted peer returns to the initiator in the estimation phase (fig. 3.6)."""

    ENTRY: ClassVar[Any]
    session: str
    topic: str
    reporter: str
    entries: tuple[Any, ...]

    def body(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "topic": self.topic,
            "reporter": self.reporter,
            "entries": [entry.to_wire() for entry in self.entries],
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            reporter=f.get("reporter", check_peer_id),
            entries=f.get("entries", check_seq, MAX_REPORT_ENTRIES, record_check(cls.ENTRY)),
        )


@dataclass(frozen=True)
class CrossValidationReport(_PeerReport):
    """Errors of the other peers' classifiers on the reporter's data, the shared documents removed."""

    TYPE: ClassVar[str] = "meta_cv"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    ENTRY: ClassVar[Any] = CvEntry
    entries: tuple[CvEntry, ...]


@dataclass(frozen=True)
class CovEntry:
    """Estimated covariance of two classifiers' correctness indicators over `joint` shared test documents.
    Two Bernoulli variables have |cov| <= 1/4."""

    origin_a: str
    origin_b: str
    joint: int
    covariance: float

    def to_wire(self) -> dict[str, Any]:
        return {
            "origin_a": self.origin_a,
            "origin_b": self.origin_b,
            "joint": self.joint,
            "covariance": float(self.covariance),
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            origin_a=f.get("origin_a", check_peer_id),
            origin_b=f.get("origin_b", check_peer_id),
            joint=f.get("joint", check_int, 0, MAX_CURSOR),
            covariance=f.get("covariance", check_float, -0.25, 0.25),
        )


@dataclass(frozen=True)
class CovarianceReport(_PeerReport):
    """Pairwise covariances of the classifiers' correctness on the reporter's data."""

    TYPE: ClassVar[str] = "meta_cov"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    ENTRY: ClassVar[Any] = CovEntry
    entries: tuple[CovEntry, ...]


@dataclass(frozen=True)
class MemberRef:
    """A member classifier of a meta model, by origin and version, with its weight w(m_i)."""

    origin: str
    model_version: int
    weight: float

    def to_wire(self) -> dict[str, Any]:
        return {"origin": self.origin, "model_version": self.model_version, "weight": float(self.weight)}

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        return cls(
            origin=f.get("origin", check_peer_id),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
            weight=f.get("weight", check_float),
        )


@dataclass(frozen=True)
class MetaModelDescription(Message):
    """The initiator's final meta classifier (thesis 3.14: members, weights, t1, t2) with the loss and
    error it expects from the estimators (3.16-3.19). The full model travels as a kind "meta" model."""

    TYPE: ClassVar[str] = "meta_model"
    MAX_FRAME: ClassVar[int] = 256 * KIB
    session: str
    topic: str
    initiator: str
    members: tuple[MemberRef, ...]
    t1: float
    t2: float
    expected_loss: float
    expected_error: float
    created: float
    model_version: int = field(default=1)

    def body(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "topic": self.topic,
            "initiator": self.initiator,
            "members": [member.to_wire() for member in self.members],
            "t1": float(self.t1),
            "t2": float(self.t2),
            "expected_loss": float(self.expected_loss),
            "expected_error": float(self.expected_error),
            "created": float(self.created),
            "model_version": self.model_version,
        }

    @classmethod
    def parse(cls, f: FieldReader) -> Self:
        description = cls(
            session=f.get("session", check_session),
            topic=f.get("topic", check_topic),
            initiator=f.get("initiator", check_peer_id),
            members=f.get("members", check_seq, MAX_META_MEMBERS, record_check(MemberRef)),
            t1=f.get("t1", check_float),
            t2=f.get("t2", check_float),
            expected_loss=f.get("expected_loss", check_float, 0.0, 1.0),
            expected_error=f.get("expected_error", check_float, 0.0, 1.0),
            created=f.get("created", check_float, 0.0, MAX_ABS_FLOAT),
            model_version=f.get("model_version", check_int, 1, MAX_VERSION),
        )
        if description.t2 > description.t1:
            raise fail("bad_value", "meta_model", f"t2 {description.t2} > t1 {description.t1}")
        return description
