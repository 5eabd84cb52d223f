"""The meta-classifier in the crawl: a focus policy wrapper the node installs over the focus loop's policy.

Pages the focus policy files in a topic that has a meta-classifier are judged again by it: the meta
confidence replaces the local confidence (so link priorities follow the meta-model) and a page the
meta-classifier rejects is not accepted (its links then tunnel, as for any rejected page).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from crawler.engine import PageVerdict

MetaScorer = Callable[[str, Sequence[str]], "np.ndarray | None"]


class MetaFocus:
    """Delegates everything to `policy`; only `score_pages` consults the meta-classifiers."""

    def __init__(self, policy: Any, meta_confidence: MetaScorer) -> None:
        self.policy = policy
        self.meta_confidence = meta_confidence

    def __getattr__(self, name: str) -> Any:
        return getattr(self.policy, name)

    def score_pages(self, pages: Sequence[Any]) -> list[PageVerdict]:
        verdicts = list(self.policy.score_pages(pages))
        by_topic: dict[str, list[int]] = {}
        for index, verdict in enumerate(verdicts):
            if verdict.accepted and verdict.topic:
                by_topic.setdefault(verdict.topic, []).append(index)
        for topic, indices in by_topic.items():
            texts = [f"{pages[i].parsed.title}\n{pages[i].parsed.text}" for i in indices]
            scores = self.meta_confidence(topic, texts)
            if scores is None:
                continue
            for i, score in zip(indices, scores, strict=True):
                verdicts[i] = PageVerdict(topic if score > 0 else None, float(abs(score)), bool(score > 0))
        return verdicts
