"""Typed messages between the UI and its node link (Harlequin style); tests record them (`message_hook`)."""

from __future__ import annotations

from typing import Any

from textual.message import Message

from tui.records import (
    CrawlFigures,
    LossSetting,
    MetaState,
    MetricSample,
    Proposal,
    SearchResults,
    Status,
    Topic,
)


class StatsUpdated(Message):
    """A live `stats` event; a newer one replaces an unhandled older one: a busy node never floods the UI."""

    def __init__(self, figures: CrawlFigures, at: float) -> None:
        super().__init__()
        self.figures = figures
        self.at = at

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StatsUpdated)


class StatusFetched(Message):
    """The node's status, polled; coalesces like StatsUpdated."""

    def __init__(self, status: Status) -> None:
        super().__init__()
        self.status = status

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StatusFetched)


class MetricsFetched(Message):
    def __init__(self, samples: list[MetricSample]) -> None:
        super().__init__()
        self.samples = samples


class NodeEvent(Message):
    """A non-stats event from the node (page, peer, model, meta, refine, log)."""

    def __init__(self, kind: str, data: Any) -> None:
        super().__init__()
        self.kind = kind
        self.data = data


class NodeProblem(Message):
    """The node could not be reached or refused a request; shown in the status bar and as a notification."""

    def __init__(self, text: str, *, connection: bool = False) -> None:
        super().__init__()
        self.text = text
        self.connection = connection


class NodeReachable(Message):
    """The link works again after a problem."""


class QuerySubmitted(Message):
    def __init__(self, query: str, topic: str | None, origin: str, verdict: str) -> None:
        super().__init__()
        self.query = query
        self.topic = topic
        self.origin = origin
        self.verdict = verdict


class ResultsFetched(Message):
    def __init__(self, results: SearchResults, why_none: str = "") -> None:
        super().__init__()
        self.results = results
        self.why_none = why_none  # the search failed: why (the node refused it, or could not be reached)


class FeedbackSent(Message):
    def __init__(self, doc_id: int, relevant: bool, fetching: bool = False) -> None:
        super().__init__()
        self.doc_id = doc_id
        self.relevant = relevant
        self.fetching = fetching  # a peer's result: the node fetches the page to train on it


class TopicsFetched(Message):
    def __init__(self, topics: list[Topic]) -> None:
        super().__init__()
        self.topics = topics


class MetaFetched(Message):
    def __init__(self, meta: MetaState) -> None:
        super().__init__()
        self.meta = meta


class LossChanged(Message):
    def __init__(self, topic: str, setting: LossSetting) -> None:
        super().__init__()
        self.topic = topic
        self.setting = setting


class ProposalsFetched(Message):
    def __init__(self, topic: str, proposals: list[Proposal]) -> None:
        super().__init__()
        self.topic = topic
        self.proposals = proposals


class ProposalDecided(Message):
    def __init__(self, proposal: Proposal, action: str) -> None:
        super().__init__()
        self.proposal = proposal
        self.action = action
