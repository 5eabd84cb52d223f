"""The meta-classifier in the crawl: a focus policy wrapper the node installs over the focus loop's policy.

Pages the focus policy files in a topic that has a meta-classifier are judged again by it: the meta
confidence replaces the local confidence (so link priorities follow the meta-model) and a page the
meta-classifier rejects is not accepted (its links then tunnel, as for any rejected page). A feed's entries,
judged by their words (`crawler.policy.FocusPolicy`), are judged again the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from crawler.policy import PageVerdict

MetaScorer = Callable[[str, Sequence[str]], "np.ndarray | None"]


class MetaFocus:
    """Delegates everything to `policy`; only `score_pages` and `score_entries` consult the
    meta-classifiers."""

    def __init__(self, policy: Any, meta_confidence: MetaScorer) -> None:
        self.policy = policy
        self.meta_confidence = meta_confidence

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def score_pages(self, pages: Sequence[Any]) -> list[PageVerdict]:
        verdicts = list(self.policy.score_pages(pages))
        return self._judged_again(verdicts, [f"{p.parsed.title}\n{p.parsed.text}" for p in pages])

    def score_entries(self, feed: Any, texts: Sequence[str]) -> list[PageVerdict]:
        """A feed's entries, judged by their words as pages are: an entry's verdict sets its link's priority,
        which follows the meta-model like a page's. A policy that judges no entries leaves them all to be
        tunnelled."""
        judge = getattr(self.policy, "score_entries", None)
        if judge is None:
            return [PageVerdict(None, 0.0, False) for _ in texts]
        return self._judged_again(list(judge(feed, texts)), texts)

    def _judged_again(self, verdicts: list[PageVerdict], texts: Sequence[str]) -> list[PageVerdict]:
        """The accepted verdicts of topics with a meta-classifier, replaced by its judgement of the texts."""
        by_topic: dict[str, list[int]] = {}
        for index, verdict in enumerate(verdicts):
            if verdict.accepted and verdict.topic:
                by_topic.setdefault(verdict.topic, []).append(index)
        for topic, indices in by_topic.items():
            scores = self.meta_confidence(topic, [texts[i] for i in indices])
            if scores is None:
                continue
            for i, score in zip(indices, scores, strict=True):
                verdicts[i] = PageVerdict(topic if score > 0 else None, float(abs(score)), bool(score > 0))
        return verdicts
