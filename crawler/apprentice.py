"""The apprentice of seed 002 (Chakrabarti, Punera, Subramanyam, WWW 2002): link priorities learnt online.

The focus policy's topic classifier stays the *critic*: it judges every fetched page. The *apprentice* is a
small two-class linear model (class-balanced logistic regression, or the paper's naive Bayes) that learns,
from those verdicts, which links lead to relevant pages, looking only at the DOM neighbourhood of each HREF
on the page that holds it (its features: `crawler.link_features`; its learners: `crawler.link_learners`).
The focus policy that puts it to work in a crawl is `crawler.apprentice_focus.ApprenticeFocus`.

**The label**: a link (u, v) is *relevant* when the critic accepts v into the topic of the queue the link
was filed in (or a topic related to it) with a normalised confidence of at least `label_threshold`
(default 0.0, the topic model's own acceptance threshold; the analogue of the paper's Pr(c*|v) >= 0.5,
since the critic's relevance is bimodal). Everything else, including pages the critic rejects, is
irrelevant.

**The loop**: when a link is queued, its hashed features wait as *pending* under the target URL; when that
page is fetched and judged, the instance (features, label) is resolved into a training buffer, together
with one instance for every other stored link into that page from a page fetched before it (the paper's
instances: every (u, v) with u fetched before v, not only the link that queued v; `in_links` bounds them
per page, 0 keeps only the queuing link). Every
`retrain_every` judged pages (the paper's batch) the buffer is folded into the counts (naive Bayes needs
no retraining from scratch), the log-odds tables are recomputed, the state is stored in the repository,
and every queued link whose features are known is rescored (the paper's switch-in, 3.7). One model is
kept per topic queue, as the paper has one focus topic.

**The switch-in** (seed 002, 3.7: the crawler consults the apprentice "once it gets a sufficient number of
examples"): until then a topic's links keep the base policy's priority, untouched. Each refit first scores
the newly resolved queued links with the model that has not seen them (out-of-sample) and learns a blend
P(relevant) = sigmoid(a * apprentice log-odds + b * log base + c) from them (a signal that ranks backwards
gets weight 0). Once each label has `blend_min_per_class` such links and the blend, fitted on one half of
them, ranks the other half better than the base priority alone (ROC AUC gain above `switch_margin`,
averaged over both halves), the apprentice switches in for good: the queue is rescored and every priority
is the blend. Without `blend`, the priority is P(relevant | features) ** weight * base ** (1 - weight) as
soon as the model has `min_per_class` instances of each label (weight 1 replaces the base priority as the
paper does).

Pending features are kept in memory (bounded); after a restart they are rebuilt from the stored link
(`links.context`, `dom_path`, `anchor_text`) and its source document, so resume loses no instance. The
cocitation evidence (regions and verdicts) is kept in memory only: after a restart it starts empty.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crawler.errors import ApprenticeError
from crawler.link_features import cocitation_features, hashed, link_features
from crawler.link_learners import (
    LEARNERS,
    LOG_ODDS_CAP,
    LinkLogistic,
    LinkNaiveBayes,
    blend_score,
    fit_blend,
    held_out_gain,
    model_from_dict,
)
from crawler.parse import Link
from crawler.policy import PageVerdict
from crawler.repository import Repository
from crawler.settings import doc as setting
from crawler.urls import host_of
from metamodels.features import FeatureConfig, Featurizer

NO_TOPIC = ""  # model key of links queued without a topic
PROTECTED_PRIORITY = 1e6  # queued entries at or above this (bookmarks, boosted hub links) are never rescored
MAX_BLEND_ROWS = 5000


@dataclass(frozen=True)
class ApprenticeSettings:
    radius: int = setting(5, "DOM leaves either side of an anchor whose terms are features (d_max).")
    retrain_every: int = setting(
        50,
        "Judged pages between two refits (the batch). A refit only adds counts and rescores the queue, so a "
        "small batch lets the apprentice steer crawls of a few hundred pages.",
    )
    in_links: int = setting(
        50, "Most stored links into a judged page that become training instances (0: only the queuing link)."
    )
    min_per_class: int = setting(
        10, "Instances of each label a topic's model needs before it sets priorities."
    )
    label_threshold: float = setting(
        0.0, "Critic confidence a target page needs (besides acceptance in the link's topic) to be relevant."
    )
    blend: bool = setting(
        True,
        "Learn how much the apprentice and the base priority count, from the links resolved so far; off: the "
        "fixed weight.",
    )
    weight: float = setting(
        0.5,
        "Without blend: priority = P(relevant) ** weight * base ** (1 - weight) once the model is trained; "
        "1 replaces the base priority.",
    )
    blend_min_per_class: int = setting(
        6,
        "Out-of-sample resolved links of each label the blend needs before it is learnt and the switch-in is "
        "tested.",
    )
    switch_margin: float = setting(
        0.02,
        "With blend: held-out ROC AUC the blend must gain over the base priority alone before the apprentice "
        "switches in (until then the base priority is left untouched).",
    )
    learner: str = setting(
        "logistic",
        "naive_bayes (the paper's: additive counts) or logistic (balanced logistic regression refit on the "
        "latest max_instances links; ranks better on crawls of a few thousand pages).",
    )
    cocitation: bool = setting(
        False,
        "Seed 002's cocitation features (3.8): whether other links of the same DOM region (same source page, "
        "same tag path: one list or table) already led to judged pages, relevant or not. Off: on WebKB they "
        "ranked a stored crawl's links better but guided offline crawls worse (course 54% -> 42% fewer "
        "irrelevant fetches, faculty 33% -> 23%).",
    )
    max_instances: int = setting(50_000, "Links a logistic learner keeps and refits on.")
    n_features: int = setting(2**18, "Size of the hashed feature space.")
    max_pending: int = setting(300_000, "Most queued links whose features are kept in memory.")

    def __post_init__(self) -> None:
        if self.radius < 0 or self.in_links < 0 or self.retrain_every < 1 or self.min_per_class < 1:
            raise ValueError("radius and in_links must be >= 0, retrain_every and min_per_class >= 1")
        if self.learner not in LEARNERS:
            raise ValueError(f"learner must be one of {', '.join(LEARNERS)}, not {self.learner!r}")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"weight must be in [0, 1], not {self.weight}")


# -- persistence --------------------------------------------------------------------------------------------
def _schema_v1(db: Any) -> None:
    db.execute(
        "CREATE TABLE IF NOT EXISTS apprentice_models "
        "(topic TEXT PRIMARY KEY, state TEXT NOT NULL, buffer TEXT NOT NULL DEFAULT '[]', updated_at REAL)"
    )


MIGRATIONS = [_schema_v1]


def ensure_schema(repo: Repository) -> None:
    repo.migrate("apprentice", MIGRATIONS)


@dataclass(frozen=True)
class PendingLink:
    """A queued link's features, waiting for its target's verdict to become a training instance."""

    topic: str
    indices: np.ndarray  # the link's own features, without the cocitation features (they change)
    base: float
    source: str = ""  # final URL of the page holding the link ("" when unknown)
    dom_path: str = ""


class Apprentice:
    """The learner with its pending links and training buffer, per topic queue."""

    def __init__(self, settings: ApprenticeSettings | None = None) -> None:
        self.settings = settings or ApprenticeSettings()
        self.featurizer = Featurizer(FeatureConfig(n_features=self.settings.n_features))
        self.models: dict[str, LinkNaiveBayes | LinkLogistic] = {}
        self.buffer: list[tuple[str, np.ndarray, int]] = []
        self.pending: OrderedDict[str, PendingLink] = OrderedDict()
        self.judged = 0
        self.refits = 0
        self.resolved = {0: 0, 1: 0}
        self.blends: dict[str, tuple[float, float, float]] = {}
        self.blend_rows: dict[str, list[tuple[float, float, int]]] = {}
        self._blend_due: list[tuple[str, np.ndarray, float, int]] = []
        self.switched_in: dict[str, int] = {}  # topic -> judged pages when its apprentice switched in
        self.gains: dict[str, float] = {}  # topic -> last held-out AUC gain of the blend over the base
        self.gain_history: dict[str, list[tuple[int, float]]] = {}  # topic -> (judged, gain) per test
        self.regions: dict[tuple[str, str], set[str]] = {}  # (source, tag path) -> target URLs
        self.labels: OrderedDict[str, int] = OrderedDict()  # judged URL -> its label (cocitation)

    def model(self, topic: str | None) -> LinkNaiveBayes | LinkLogistic:
        key = topic or NO_TOPIC
        if key not in self.models:
            self.models[key] = (
                LinkLogistic(self.settings.n_features, self.settings.max_instances)
                if self.settings.learner == LinkLogistic.KIND
                else LinkNaiveBayes(self.settings.n_features)
            )
        return self.models[key]

    def features(
        self, link: Link, context: Iterable[tuple[int, str]], source_url: str, verdict: PageVerdict
    ) -> np.ndarray:
        names = link_features(
            self.featurizer,
            context,
            link.dom_path,
            verdict.topic if verdict.accepted else None,
            verdict.confidence,
            host_of(link.url) == host_of(source_url),
            self.settings.radius,
            link.url,
        )
        return hashed(self.featurizer, names)

    def priority(self, topic: str | None, indices: np.ndarray, base: float) -> float:
        """The link's priority. With `blend`: the base priority, untouched, until the topic's apprentice has
        switched in (`switched_in`), then the learnt blend. Without: the base until the model is trained,
        then the fixed-weight mix."""
        key = topic or NO_TOPIC
        model = self.models.get(key)
        if model is None or not model.trained(self.settings.min_per_class):
            return base
        if self.settings.blend:
            if key not in self.switched_in or key not in self.blends:
                return base
            odds = max(-LOG_ODDS_CAP, min(LOG_ODDS_CAP, model.log_odds(indices)))
            return blend_score(self.blends[key], odds, math.log(max(base, 1e-12)))
        p = model.probability(indices)
        w = self.settings.weight
        return p if w == 1.0 else p**w * max(base, 1e-12) ** (1.0 - w)

    def remember(
        self,
        url: str,
        topic: str | None,
        indices: np.ndarray,
        base: float,
        source: str = "",
        dom_path: str = "",
    ) -> None:
        self.pending[url] = PendingLink(topic or NO_TOPIC, indices, base, source, dom_path)
        while len(self.pending) > self.settings.max_pending:
            self.pending.popitem(last=False)

    # -- cocitation ---------------------------------------------------------------------------------------
    def add_region_links(self, source: str, links: Iterable[tuple[str, str]]) -> None:
        """Record the (target URL, tag path) links of a fetched page as members of its DOM regions."""
        if not self.settings.cocitation:
            return
        for url, dom_path in links:
            self.regions.setdefault((source, dom_path), set()).add(url)
        while len(self.regions) > self.settings.max_pending:
            del self.regions[next(iter(self.regions))]

    def judge(self, urls: Iterable[str], relevant: bool) -> None:
        """A fetched page's verdict, for the cocitation features of its region siblings."""
        if not self.settings.cocitation:
            return
        for url in urls:
            self.labels[url] = int(relevant)
        while len(self.labels) > self.settings.max_pending:
            self.labels.popitem(last=False)

    def region_counts(self, source: str, dom_path: str) -> tuple[int, int]:
        """(relevant, irrelevant) judged targets of the region's links."""
        members = self.regions.get((source, dom_path), ())
        judged = [self.labels[u] for u in members if u in self.labels]
        return sum(judged), len(judged) - sum(judged)

    def full_indices(
        self, link: PendingLink, counts: dict[tuple[str, str], tuple[int, int]] | None = None
    ) -> np.ndarray:
        """The link's features with its current cocitation features (`counts`: a cache of region counts)."""
        if not self.settings.cocitation or not link.source:
            return link.indices
        key = (link.source, link.dom_path)
        if counts is None or key not in counts:
            found = self.region_counts(*key)
            if counts is not None:
                counts[key] = found
        else:
            found = counts[key]
        names = cocitation_features(*found)
        return np.concatenate([link.indices, hashed(self.featurizer, names)]) if names else link.indices

    def resolve(self, url: str, relevant: bool, fallback: PendingLink | None = None) -> bool:
        """Turn the pending link to `url` into a training instance; False when its features are unknown."""
        found = self.pending.pop(url, None) or fallback
        if found is None:
            return False
        self.learn(found, relevant)
        return True

    def learn(self, link: PendingLink, relevant: bool) -> None:
        """Buffer one labelled link for the next refit (a link queued with a base priority also teaches the
        blend)."""
        label = int(relevant)
        indices = self.full_indices(link)  # the target is not judged yet: its own label is not counted
        self.buffer.append((link.topic, indices, label))
        self.resolved[label] += 1
        if link.base > 0.0:
            self._blend_due.append((link.topic, indices, link.base, label))

    def refit(self) -> None:
        """Fold the buffer into the counts and recompute every touched model's tables; with `blend`, first
        score the newly resolved queued links with the models that have not seen them yet and refit the
        blends on those out-of-sample scores."""
        if self.settings.blend:
            self._collect_blend_rows()
        touched = set()
        for topic, indices, label in self.buffer:
            self.model(topic).add(indices, label)
            touched.add(topic)
        self.buffer = []
        for topic in touched:
            self.models[topic].fit()
        self.refits += 1
        if self.settings.blend:
            for topic, rows in self.blend_rows.items():
                fitted = fit_blend(rows, self.settings.blend_min_per_class)
                if fitted is not None:
                    self.blends[topic] = fitted
                self._test_switch_in(topic, rows)

    def _test_switch_in(self, topic: str, rows: Sequence[tuple[float, float, int]]) -> None:
        """Switch the topic's apprentice in (for good, as seed 002's 3.7 does) once its blend, learnt from
        enough out-of-sample links, ranks held-out links better than the base priority by `switch_margin`."""
        if topic in self.switched_in or topic not in self.blends:
            return
        gain = held_out_gain(rows, self.settings.blend_min_per_class // 2)
        if gain is None:
            return
        self.gains[topic] = round(gain, 4)
        self.gain_history.setdefault(topic, []).append((self.judged, self.gains[topic]))
        if gain > self.settings.switch_margin:
            self.switched_in[topic] = self.judged

    def _collect_blend_rows(self) -> None:
        due, self._blend_due = self._blend_due, []
        for topic, indices, base, label in due:
            model = self.models.get(topic)
            if model is None or not model.trained(self.settings.min_per_class):
                continue
            odds = max(-LOG_ODDS_CAP, min(LOG_ODDS_CAP, model.log_odds(indices)))
            rows = self.blend_rows.setdefault(topic, [])
            rows.append((odds, math.log(max(base, 1e-12)), label))
            del rows[:-MAX_BLEND_ROWS]

    def rescored(self, entries: Iterable[tuple[str, str | None, float]]) -> dict[str, float]:
        """New priorities for queued (url, topic, priority) entries whose features are known, in topics whose
        apprentice has switched in (with `blend`; before, the queue keeps the base's priorities as given,
        including the highest of several links into one URL)."""
        out = {}
        counts: dict[tuple[str, str], tuple[int, int]] = {}
        for url, topic, priority in entries:
            found = self.pending.get(url)
            if found is None or priority >= PROTECTED_PRIORITY or found.topic != (topic or NO_TOPIC):
                continue
            if self.settings.blend and found.topic not in self.switched_in:
                continue
            out[url] = self.priority(topic, self.full_indices(found, counts), found.base)
        return out

    # -- state as plain data --------------------------------------------------------------------------------
    def state_rows(self) -> list[tuple[str, str, str]]:
        """(topic, model JSON, buffer JSON) per topic, buffered instances included."""
        buffers: dict[str, list] = {}
        for topic, indices, label in self.buffer:
            buffers.setdefault(topic, []).append([label, indices.tolist()])
        topics = sorted(set(self.models) | set(buffers))
        return [
            (
                topic,
                json.dumps(
                    {
                        **self.model(topic).to_dict(),
                        **({"blend": self.blends[topic]} if topic in self.blends else {}),
                        **({"switched_in": self.switched_in[topic]} if topic in self.switched_in else {}),
                    },
                    separators=(",", ":"),
                ),
                json.dumps(buffers.get(topic, []), separators=(",", ":")),
            )
            for topic in topics
        ]

    def load_rows(self, rows: Iterable[tuple[str, str, str]]) -> None:
        models: dict[str, LinkNaiveBayes | LinkLogistic] = {}
        buffer: list[tuple[str, np.ndarray, int]] = []
        blends: dict[str, tuple[float, float, float]] = {}
        switched_in: dict[str, int] = {}
        for topic, state, pending in rows:
            try:
                data = json.loads(state)
                models[topic] = model_from_dict(data)
                if "blend" in data:
                    a, b, c = (float(x) for x in data["blend"])
                    blends[topic] = (a, b, c)
                if "switched_in" in data:
                    switched_in[topic] = int(data["switched_in"])
                buffer.extend(
                    (topic, np.asarray(indices, dtype=np.int64), int(label))
                    for label, indices in json.loads(pending)
                )
            except (ValueError, TypeError) as exc:
                raise ApprenticeError(f"malformed apprentice state for topic {topic!r}: {exc}") from exc
            if models[topic].n_features != self.settings.n_features:
                raise ApprenticeError(
                    f"the stored apprentice uses {models[topic].n_features} features, the settings "
                    f"{self.settings.n_features}: keep n_features or drop the apprentice_models table"
                )
        self.models = models
        self.buffer = buffer
        self.blends = blends
        self.switched_in = switched_in

    def save(self, repo: Repository, now: float) -> None:
        rows = [(*row, now) for row in self.state_rows()]
        with repo.transaction() as db:
            db.conn.executemany(
                "INSERT INTO apprentice_models (topic, state, buffer, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(topic) DO UPDATE SET state = excluded.state, buffer = excluded.buffer, "
                "updated_at = excluded.updated_at",
                rows,
            )

    def load(self, repo: Repository) -> int:
        rows = repo.db.execute("SELECT topic, state, buffer FROM apprentice_models").fetchall()
        self.load_rows(rows)
        return len(rows)


# -- instances from the repository -------------------------------------------------------------------------
def _related(topic: str | None, queue: str) -> bool:
    return topic is not None and (
        not queue or topic == queue or topic.startswith(queue + "/") or queue.startswith(topic + "/")
    )


def is_relevant(verdict: PageVerdict, queue: str, threshold: float) -> bool:
    """The label of a link into a page with this verdict, filed in the `queue` topic (module docstring)."""
    return verdict.accepted and _related(verdict.topic, queue) and verdict.confidence >= threshold


def stored_in_links(
    repo: Repository, apprentice: Apprentice, urls: Sequence[str], queue: str, before: int | None = None
) -> list[PendingLink]:
    """The stored links into `urls` (a target's URL and final URL) from other fetched pages (fetched before
    document id `before` when given), one per source page and at most `in_links` (at least one),
    featurised again: a judged page's training instances."""
    targets = sorted(set(urls))
    marks = ", ".join("?" * len(targets))
    rows = repo.db.execute(
        "SELECT l.dom_path, l.context, d.topic, d.confidence, d.accepted, d.final_url "
        f"FROM links l JOIN documents d ON l.source_id = d.id WHERE l.target_url IN ({marks}) "
        f"AND l.kind = 'a' AND d.duplicate_of IS NULL AND d.final_url NOT IN ({marks}) AND d.id < ? "
        "ORDER BY d.id",
        [*targets, *targets, before if before is not None else 2**62],
    ).fetchall()
    limit = max(apprentice.settings.in_links, 1)
    found: dict[str, PendingLink] = {}
    for dom_path, context, topic, confidence, accepted, final_url in rows:
        if final_url in found:
            continue
        verdict = PageVerdict(topic, float(confidence or 0.0), bool(accepted))
        link = Link(urls[0], "", dom_path, 0, 0)
        pairs = [(int(offset), str(text)) for offset, text in json.loads(context)]
        found[final_url] = PendingLink(
            queue, apprentice.features(link, pairs, final_url, verdict), 0.0, final_url, dom_path
        )
        if len(found) >= limit:
            break
    return list(found.values())


def learn_from_crawl(apprentice: Apprentice, repo: Repository, topic: str | None) -> int:
    """Train the `topic` model on a stored crawl (seed 002's protocol A: the apprentice learns from a
    baseline crawl before guiding one): every stored link (u, v) with u fetched before v, labelled by the
    stored verdict of v relative to `topic` (the link that queued v also teaches the blend, with the priority
    it was queued with); returns the instances added (refits included). It reads the repository only: no
    ground truth, no page the crawl did not fetch.

    Seed 002's step 3 takes every (u, v) with both fetched; links from pages fetched after v are left out
    because they teach what a crawler cannot use: on a WebKB faculty baseline they add 37 relevant instances
    (mostly a professor's sub-pages and group pages linking back to the home page the crawl already has:
    "(personal)", the person's name) and 572 irrelevant ones, and guided crawls trained with them made 18-22%
    fewer irrelevant fetches instead of 30%."""
    queue = topic or NO_TOPIC
    threshold = apprentice.settings.label_threshold
    documents = repo.db.execute(
        "SELECT id, url, final_url, topic, confidence, accepted FROM documents "
        "WHERE duplicate_of IS NULL AND origin IS NULL ORDER BY id"
    ).fetchall()
    queued = {
        url: (source, priority)
        for url, source, priority in repo.db.execute("SELECT url, source, priority FROM frontier")
        if priority < PROTECTED_PRIORITY
    }
    if apprentice.settings.cocitation:
        by_source: dict[str, list[tuple[str, str]]] = {}
        for source, dom_path, target in repo.db.execute(
            "SELECT d.final_url, l.dom_path, l.target_url FROM links l "
            "JOIN documents d ON l.source_id = d.id WHERE l.kind = 'a' AND d.duplicate_of IS NULL"
        ):
            by_source.setdefault(source, []).append((target, dom_path))
        for source, links in by_source.items():
            apprentice.add_region_links(source, links)
    added = 0
    for doc_id, url, final_url, doc_topic, confidence, accepted in documents:
        relevant = is_relevant(
            PageVerdict(doc_topic, float(confidence or 0.0), bool(accepted)), queue, threshold
        )
        source, base = queued.get(url, ("", 0.0))
        for link in stored_in_links(repo, apprentice, (url, final_url), queue, before=doc_id):
            apprentice.learn(
                dataclasses.replace(link, base=base) if link.source == source else link, relevant
            )
            added += 1
        apprentice.judge((url, final_url), relevant)  # siblings judged later see it, as in the crawl
        if doc_id % apprentice.settings.retrain_every == 0 and apprentice.buffer:
            apprentice.refit()  # in batches, as in the crawl: the blend learns from out-of-sample scores
    if apprentice.buffer:
        apprentice.refit()
    apprentice.regions.clear()  # a crawl it then guides knows only its own verdicts
    apprentice.labels.clear()
    return added
