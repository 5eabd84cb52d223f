"""Irrelevant fetches of the focused crawler without and with the apprentice (seed 002, Fig. 10).

    python -m simnet.experiments.apprentice --web devweb --bookmarks simnet/webs/devweb-bookmarks.html \
        --pages 1000
    python -m simnet.experiments.apprentice --web webkb --bookmarks simnet/webs/webkb-bookmarks.html \
        --pages 1000 --tunnel-depth 4 --critic-examples 150
    python -m simnet.experiments.apprentice ... --protocol online    # seed 002's 3.7 measure instead

Measured as the paper does (one focus topic c* per crawl, loss compared after the same number of fetches):
for each topic, two crawls of `--pages` pages each start from that topic's bookmarks (mapped to the served
web) plus the web's hub page (`--no-hub` leaves it out). Both use the same focus policy held to the one
topic (a page is relevant only when the critic puts it in that topic's subtree; links of other pages are
tunnelled), so every fetch of a crawl is spent on its topic; the second crawl wraps the policy in
`crawler.apprentice_focus.ApprenticeFocus`.

**The critic** is the focus policy's topic model, frozen (unless `--retrain`). Trained on a few bookmarks
it accepts almost nothing (3% of the devweb's database pages), which is not the paper's critic: that one is
a classifier trained ahead of the crawl on hundreds of examples per class. `--critic-examples K` (default
60) adds K pages of each ground-truth group of the web, sampled from its files with a fixed seed, as
training documents: the topic's target group (the majority group of its bookmarks) as positives, every
other group as negatives at the root. `--critic-examples 0` is the bookmarks-only critic.

`critic` gives, per topic, the critic's precision, recall and accuracy against the ground truth on up to
1500 pages of the web it was not trained on (WebKB faculty at 60 examples: recall about 0.5).

**Protocols** (`--protocol`, printed as `protocol`): `offline` (default) is the paper's Fig. 10 protocol
(3.5), which its 30-90% figure measures: the crawl without the apprentice runs first (the baseline); the
apprentice is then trained on every link (u, v) of that crawl with both u and v fetched, labelled by the
critic's stored verdict on v (`crawler.apprentice.learn_from_crawl`: it reads the baseline's repository
only, never the web's ground truth nor a page the baseline did not fetch), and guides a crawl from the same
seeds, learning on as it goes. `online` is the paper's 3.7 measure: the apprentice starts empty and learns
from its own crawl, switching in once it ranks held-out links better than the base priority (`switch_in`,
`after_switch_in` below). On a small web the guided crawl revisits many of the baseline's pages, so
`overlap` (the share of its pages the baseline fetched too) says how much it could have memorised (the
paper's 3.6 reports the same).

Per topic, the JSON line has:

- irrelevant_without / irrelevant_with: fetched pages the critic does not accept into the topic, counted
  over the first `compared` fetches of each crawl; reduction = 1 - with / without (the paper's loss
  reduction). `compared` = min(--pages, fetched_without, fetched_with, pool), where `pool` is the number of
  distinct pages the critic accepts in either crawl: a small web holds few relevant pages, and once a
  crawler has fetched them all every further fetch is irrelevant for any crawler, so comparing past the
  pool adds the same forced loss to both sides (devweb Sysadmin holds 476 pages, WebKB course ~200
  reachable ones in 1000 fetches). `at_budget` holds the same figures over the whole smaller crawl, and
  `protocol` says this; `--full-budget` compares over the whole crawl instead;
- switch_in / after_switch_in: the fetch number (from 0) at which the apprentice switched in (see
  `crawler.apprentice`: enough out-of-sample links of each label and a held-out ranking better than the base
  priority's; None if it never did) and the same figures over the fetches from there to the end of the
  comparison (seed 002's 3.7 measure). The top-level figures stay the whole comparison;
- irrelevant_truth_* / reduction_truth: the same with the web's ground truth (page group != target group);
- fetched_without / fetched_with: pages each crawl fetched (fewer than `--pages` when its frontier ran dry);
- irrelevant_truth_floor: the fewest truth-irrelevant fetches possible in `compared` fetches, when the
  budget exceeds the pages of the target group the web holds (no crawler can then reduce the loss below it).

`curves` holds, per variant, the harvest rate (1 - loss rate) summed over the topics after every 250
pages of each topic's crawl, by the critic (`harvest_rate`) and the ground truth (`harvest_rate_truth`);
`topic_curves` the same per topic. The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import trio

from crawler.apprentice import Apprentice, ApprenticeSettings, learn_from_crawl
from crawler.apprentice_focus import ApprenticeFocus
from crawler.engine import Crawler
from crawler.focus import SEED_PRIORITY, FocusSettings, TopicFocus, in_subtree
from crawler.parse import Link, parse_html
from crawler.policy import CrawledPage, PageVerdict
from crawler.repository import Repository
from crawler.taxonomy import LOCAL, NEGATIVE, POSITIVE, ROOT, Taxonomy, TrainingDocument, read_taxonomy
from simnet.experiments.webrun import add_web_arguments, prepare_training, sequential_settings
from simnet.web import WebCorpus, load_web, serve_web_in_subprocess

VARIANTS = ("without", "with")
ONLINE, OFFLINE = "online", "offline"
PROTOCOLS = {
    ONLINE: "online: the apprentice starts empty and learns from its own crawl (seed 002 section 3.7)",
    OFFLINE: (
        "offline: the apprentice is first trained on every link (u, v) of the crawl without it, then guides "
        "a crawl from the same seeds and keeps learning (seed 002 section 3.5, protocol of Fig. 10)"
    ),
}
CURVE_STEP = 250
CRITIC_SAMPLE_SEED = 0
CRITIC_CHECK_PAGES = 1500


class OneTopicFocus:
    """A focus policy held to one topic, the paper's single focus topic c*: a page counts as accepted only
    when the critic puts it in `topic`'s subtree, and every link is filed in `topic`'s queue (links of other
    pages are tunnelled by the base policy). Everything else is the base's."""

    def __init__(self, base: TopicFocus, topic: str) -> None:
        self.base = base
        self.topic = topic

    def __getattr__(self, name: str) -> Any:
        base = self.__dict__.get("base")
        if base is None:
            raise AttributeError(name)
        return getattr(base, name)

    def seeds(self) -> dict[str, list[str]]:
        return {
            self.topic: [
                u for t, urls in self.base.seeds().items() if in_subtree(t, self.topic) for u in urls
            ]
        }

    def score_pages(self, pages: Sequence[CrawledPage]) -> list[PageVerdict]:
        return [
            v if v.accepted and in_subtree(v.topic, self.topic) else PageVerdict(None, v.confidence, False)
            for v in self.base.score_pages(pages)
        ]

    def link_topic(self, page: CrawledPage, verdict: PageVerdict) -> str:
        return self.topic

    def link_priority(self, page: CrawledPage, link: Link, verdict: PageVerdict) -> float | None:
        return self.base.link_priority(page, link, verdict)


# -- the critic ---------------------------------------------------------------------------------------------
def group_pages(corpus: WebCorpus) -> dict[str, list[Path]]:
    """The HTML files of each ground-truth group (a page's own label where the web has page labels)."""
    groups: dict[str, list[Path]] = {}
    for site in corpus.sites:
        labels = site.page_labels
        for path in sorted(site.root.rglob("*.htm*")):
            group = labels.get("/" + path.relative_to(site.root).as_posix()) if labels else site.group
            if group:
                groups.setdefault(group, []).append(path)
    return groups


def critic_examples(
    corpus: WebCorpus, targets: dict[str, str], per_group: int, seed: int = CRITIC_SAMPLE_SEED
) -> list[TrainingDocument]:
    """`per_group` pages of each group as training documents: positives of the topics whose target it is,
    negatives at the root for a group no topic targets (local documents: never crawl seeds)."""
    rng = random.Random(seed)
    topics_of: dict[str, list[str]] = {}
    for topic, group in targets.items():
        topics_of.setdefault(group, []).append(topic)
    docs = []
    for group, paths in sorted(group_pages(corpus).items()):
        sample = rng.sample(paths, min(per_group, len(paths)))
        for path in sample:
            page = parse_html(path.read_bytes(), "http://example.invalid/")
            if not page.ok or not page.text.strip():
                continue
            for topic in topics_of.get(group, [ROOT]):
                polarity = POSITIVE if topic != ROOT else NEGATIVE
                docs.append(
                    TrainingDocument(
                        topic, polarity, path=str(path), title=page.title, text=page.text, status=LOCAL
                    )
                )
    return docs


def critic_quality(
    focus: TopicFocus,
    corpus: WebCorpus,
    targets: dict[str, str],
    held_out: set[str],
    sample: int = CRITIC_CHECK_PAGES,
    seed: int = CRITIC_SAMPLE_SEED,
) -> dict[str, dict[str, float]]:
    """Per topic, precision, recall and accuracy of the critic's acceptance into the topic against the web's
    ground truth (page group == target group), on up to `sample` pages it was not trained on."""
    pages = [(p, g) for g, paths in group_pages(corpus).items() for p in paths if str(p) not in held_out]
    pages = random.Random(seed).sample(pages, min(sample, len(pages)))
    texts, groups = [], []
    for path, group in pages:
        page = parse_html(path.read_bytes(), "http://example.invalid/")
        texts.append(f"{page.title}\n{page.text}")
        groups.append(group)
    verdicts = focus.model.classify_texts(texts) if texts else []
    out = {}
    for topic, target in targets.items():
        said = [v.accepted and in_subtree(v.topic, topic) for v in verdicts]
        true = [g == target for g in groups]
        hits = sum(a and b for a, b in zip(said, true, strict=True))
        out[topic] = {
            "pages": len(true),
            "precision": round(hits / max(sum(said), 1), 3),
            "recall": round(hits / max(sum(true), 1), 3),
            "accuracy": round(sum(a == b for a, b in zip(said, true, strict=True)) / max(len(true), 1), 3),
        }
    return out


def with_critic_examples(taxonomy: Taxonomy, docs: list[TrainingDocument]) -> Taxonomy:
    return dataclasses.replace(taxonomy, documents=taxonomy.documents + tuple(docs))


# -- one crawl ----------------------------------------------------------------------------------------------
async def crawl_topic(
    variant: str,
    repo: Repository,
    base: TopicFocus,
    topic: str,
    hub_url: str | None,
    pages: int,
    apprentice: ApprenticeSettings,
    pretrained: Apprentice | None = None,
) -> Any:
    focused = OneTopicFocus(base, topic)
    policy: Any = ApprenticeFocus(focused, apprentice) if variant == "with" else focused
    crawler = Crawler(repo, sequential_settings(), policy=policy, lockstep=True)
    try:
        policy.attach(crawler)
        if pretrained is not None and variant == "with":
            policy.apprentice = pretrained
        crawler.add_seeds(focused.seeds()[topic], topic=topic, priority=SEED_PRIORITY)
        if hub_url:
            crawler.add_seeds([hub_url], topic=topic, priority=SEED_PRIORITY)
        await crawler.run(pages)
    finally:
        await crawler.aclose()
    policy.record_stats()
    return policy


def fetched_rows(repo: Repository) -> list[tuple[str, str | None, bool]]:
    """(final URL, critic topic, accepted) of every stored document in fetch order."""
    return repo.db.execute("SELECT final_url, topic, accepted FROM documents ORDER BY id").fetchall()


def relevance(
    rows: list[tuple], topic: str, target: str, label_of: Callable[[str], str | None]
) -> tuple[list[bool], list[bool]]:
    """Per fetch, relevant by the critic and by the ground truth."""
    critic = [bool(accepted) and in_subtree(critic_topic, topic) for _, critic_topic, accepted in rows]
    truth = [label_of(url) == target for url, _, _ in rows]
    return critic, truth


def harvest_curve(critic: list[bool], truth: list[bool], step: int = CURVE_STEP) -> dict[str, list]:
    """Relevant fetches by critic and truth after every `step` fetches (and at the end)."""
    marks = sorted({n for n in range(step, len(critic) + 1, step)} | ({len(critic)} if critic else set()))
    return {
        "pages": marks,
        "critic": [sum(critic[:n]) for n in marks],
        "truth": [sum(truth[:n]) for n in marks],
    }


def combined_curve(curves: list[dict[str, list]]) -> dict[str, list]:
    """Harvest rates summed over topics at each common mark."""
    length = min((len(c["pages"]) for c in curves), default=0)
    out: dict[str, list] = {"pages": [], "harvest_rate": [], "harvest_rate_truth": []}
    for i in range(length):
        fetched = sum(c["pages"][i] for c in curves)
        out["pages"].append(curves[0]["pages"][i])
        out["harvest_rate"].append(round(sum(c["critic"][i] for c in curves) / fetched, 4))
        out["harvest_rate_truth"].append(round(sum(c["truth"][i] for c in curves) / fetched, 4))
    return out


def reduction(without: int, with_: int) -> float | None:
    return round(1.0 - with_ / without, 4) if without else None


POOL_PROTOCOL = (
    "irrelevant fetches after the same number n of fetches in both crawls (seed 002's loss at epoch n), "
    "n = min(pages, fetched_without, fetched_with, pool), pool = distinct pages the critic accepts in "
    "either crawl: past the pool every further fetch is irrelevant for any crawler, so a larger n only "
    "adds the same forced loss to both sides"
)


def overlap(rows: dict[str, list[tuple]], n: int) -> float | None:
    """Fraction of the first `n` pages fetched with the apprentice that the crawl without it fetched too."""
    without = {row[0] for row in rows["without"]}
    with_ = [row[0] for row in rows["with"][:n]]
    return round(sum(url in without for url in with_) / len(with_), 4) if with_ else None


def relevant_pool(rows: dict[str, list[tuple]], critic: dict[str, list[bool]]) -> int:
    """Distinct final URLs the critic accepts in either crawl: the relevant pages the crawls could reach."""
    return len({row[0] for v in VARIANTS for row, ok in zip(rows[v], critic[v], strict=True) if ok})


def irrelevant_counts(
    measured: dict[str, tuple[list[bool], list[bool]]], n: int, start: int = 0
) -> dict[str, Any]:
    """Irrelevant fetches among fetches start..n-1 of each crawl, by the critic and by the truth."""
    out: dict[str, Any] = {"compared": n - start}
    for kind, index in (("", 0), ("_truth", 1)):
        counts = {v: n - start - sum(measured[v][index][start:n]) for v in VARIANTS}
        out[f"irrelevant{kind}_without"] = counts["without"]
        out[f"irrelevant{kind}_with"] = counts["with"]
        out[f"reduction{kind}"] = reduction(counts["without"], counts["with"])
    return out


AFTER_SWITCH_IN = (
    "irrelevant fetches from the apprentice's switch-in (fetch number from_fetch, counted from 0) to the end "
    "of the same comparison, in both crawls (seed 002's 3.7 measure: the loss accumulation after guidance "
    "starts); the topic's top-level figures are over the whole comparison"
)


def compare(
    measured: dict[str, tuple[list[bool], list[bool]]],
    target_pages: int | None = None,
    pool: int | None = None,
    switch_in: int | None = None,
) -> dict[str, Any]:
    """The topic's figures over the first `compared` fetches of both crawls: the smaller crawl, cut to the
    relevant `pool` when given (see POOL_PROTOCOL); `at_budget` holds the same figures over the smaller
    crawl. With the number of pages the web holds in the target group, `irrelevant_truth_floor` is the
    fewest truth-irrelevant fetches any crawler can make in `compared` fetches. With the fetch number at
    which the apprentice switched in, `after_switch_in` holds the figures from there on (AFTER_SWITCH_IN;
    None when it never switched in within the comparison)."""
    budget = min(len(measured[v][0]) for v in VARIANTS)
    n = min(budget, pool) if pool is not None else budget
    out = irrelevant_counts(measured, n)
    out["switch_in"] = switch_in
    out["after_switch_in"] = (
        {"from_fetch": switch_in, "measure": AFTER_SWITCH_IN, **irrelevant_counts(measured, n, switch_in)}
        if switch_in is not None and switch_in < n
        else None
    )
    if pool is not None:
        out["pool"] = pool
        out["protocol"] = POOL_PROTOCOL
        out["at_budget"] = irrelevant_counts(measured, budget)
        if switch_in is not None and switch_in < budget:
            out["at_budget"]["after_switch_in"] = irrelevant_counts(measured, budget, switch_in)
    if target_pages is not None:
        out["irrelevant_truth_floor"] = max(0, n - target_pages)
    for v in VARIANTS:
        out[f"fetched_{v}"] = len(measured[v][0])
    return out


async def run_experiment(
    web_name: str,
    bookmarks: Path,
    pages: int,
    hub: bool,
    focus: FocusSettings,
    apprentice: ApprenticeSettings,
    critic_per_group: int,
    cross_links: int = 0,
    topics: Sequence[str] = (),
    pool_budget: bool = True,
    protocol: str = OFFLINE,
) -> dict:
    corpus = load_web(web_name)
    taxonomy = read_taxonomy(bookmarks)
    report: dict[str, Any] = {
        "web": corpus.name,
        "pages": pages,
        "protocol": PROTOCOLS[protocol],
        "topics": {},
        "curves": {},
        "seconds": {},
    }
    with serve_web_in_subprocess(corpus, cross_links=cross_links) as web:
        fetched, targets = await prepare_training(web, taxonomy)
        targets = {t: g for t, g in targets.items() if not topics or t in topics}
        report["targets"] = targets
        examples = critic_examples(corpus, targets, critic_per_group) if critic_per_group else []
        report["critic_examples"] = len(examples)
        groups = group_pages(corpus)
        critic_taxonomy = with_critic_examples(fetched, examples)
        report["critic"] = critic_quality(
            TopicFocus(critic_taxonomy, focus), corpus, targets, {d.path for d in examples if d.path}
        )
        curves: dict[str, dict[str, Any]] = {v: {} for v in VARIANTS}
        report["apprentice"] = {}
        for topic, target in sorted(targets.items()):
            measured, rows_of = {}, {}
            switch_in: int | None = None
            pretrained: Apprentice | None = None
            offline = 0
            for variant in VARIANTS:
                started = time.monotonic()
                base = TopicFocus(critic_taxonomy, focus)
                with tempfile.TemporaryDirectory(prefix=f"apprentice-{variant}-") as tmp:
                    repo = Repository(Path(tmp) / "repository.db")
                    try:
                        policy = await crawl_topic(
                            variant,
                            repo,
                            base,
                            topic,
                            web.hub_url if hub else None,
                            pages,
                            apprentice,
                            pretrained,
                        )
                        rows = fetched_rows(repo)
                        if variant == "without" and protocol == OFFLINE:
                            pretrained = Apprentice(apprentice)
                            offline = learn_from_crawl(pretrained, repo, topic)
                    finally:
                        repo.close()
                rows_of[variant] = rows
                measured[variant] = relevance(rows, topic, target, web.label_of)
                curves[variant][topic] = harvest_curve(*measured[variant])
                report["seconds"][f"{topic}/{variant}"] = round(time.monotonic() - started, 1)
                if variant == "with":
                    learner = policy.apprentice
                    switch_in = learner.switched_in.get(topic)
                    report["apprentice"][topic] = {
                        "switch_in": switch_in,
                        "held_out_auc_gain": learner.gains.get(topic),
                        "gain_history": learner.gain_history.get(topic, [])[:20],
                        "blend_rows": {
                            "relevant": sum(r[2] for r in learner.blend_rows.get(topic, [])),
                            "irrelevant": sum(1 - r[2] for r in learner.blend_rows.get(topic, [])),
                        },
                        "blend": learner.blends.get(topic),
                        "instances": {"relevant": learner.resolved[1], "irrelevant": learner.resolved[0]},
                        "offline_instances": offline,
                        "refits": learner.refits,
                        "rescored_entries": policy.rescored_entries,
                    }
            pool = relevant_pool(rows_of, {v: measured[v][0] for v in VARIANTS}) if pool_budget else None
            report["topics"][topic] = compare(measured, len(groups.get(target, [])), pool, switch_in)
            report["topics"][topic]["overlap"] = overlap(rows_of, report["topics"][topic]["compared"])
            print(f"{topic}: {json.dumps(report['topics'][topic])}", file=sys.stderr, flush=True)
    report["curves"] = {v: combined_curve(list(curves[v].values())) for v in VARIANTS}
    report["topic_curves"] = curves
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.experiments.apprentice", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 1000, "pages per topic and crawl (default 1000)")
    parser.add_argument("--topics", default="", help="comma-separated topics to crawl (default: all)")
    parser.add_argument("--cross-links", type=int, default=0, help="cross-group links injected in the web")
    parser.add_argument(
        "--critic-examples",
        type=int,
        default=60,
        help="pages per ground-truth group added to the critic's training (0: bookmarks only)",
    )
    parser.add_argument("--strategy", default="classifier_bfs", help="the base link priority strategy")
    parser.add_argument(
        "--retrain", action="store_true", help="the focus loop's re-organisation in both crawls"
    )
    parser.add_argument(
        "--retrain-every", type=int, default=ApprenticeSettings.retrain_every, help="judged pages per refit"
    )
    parser.add_argument(
        "--weight", type=float, default=ApprenticeSettings.weight, help="apprentice weight in the priority"
    )
    parser.add_argument("--radius", type=int, default=ApprenticeSettings.radius, help="DOM window (d_max)")
    parser.add_argument(
        "--tunnel-depth",
        type=int,
        default=FocusSettings.tunnel_depth,
        help="hops through rejected pages both crawls follow (seed 002's baseline follows every link)",
    )
    parser.add_argument(
        "--learner",
        choices=("logistic", "naive_bayes"),
        default=ApprenticeSettings.learner,
        help="link learner",
    )
    parser.add_argument(
        "--switch-margin",
        type=float,
        default=ApprenticeSettings.switch_margin,
        help="held-out AUC gain over the base priority the apprentice needs to switch in",
    )
    parser.add_argument(
        "--blend-min-per-class",
        type=int,
        default=ApprenticeSettings.blend_min_per_class,
        help="out-of-sample resolved links of each label before the blend is learnt and the switch-in tested",
    )
    parser.add_argument(
        "--no-blend", action="store_true", help="fixed --weight instead of the learnt blend with the base"
    )
    parser.add_argument(
        "--in-links",
        type=int,
        default=ApprenticeSettings.in_links,
        help="stored links into a judged page that become instances (0: only the queuing link)",
    )
    parser.add_argument(
        "--full-budget",
        action="store_true",
        help="compare over the whole smaller crawl instead of cutting it to the relevant pool",
    )
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default=OFFLINE,
        help="offline (the paper's Fig. 10): trained on the crawl without it first; online (its 3.7): the "
        "apprentice learns in its own crawl",
    )
    args = parser.parse_args(argv)
    focus = FocusSettings(
        strategy=args.strategy,
        retrain=args.retrain,
        retrain_every=max(args.pages // 6, 1),
        tunnel_depth=args.tunnel_depth,
    )
    apprentice = ApprenticeSettings(
        radius=args.radius,
        retrain_every=args.retrain_every,
        weight=args.weight,
        in_links=args.in_links,
        learner=args.learner,
        blend=not args.no_blend,
        switch_margin=args.switch_margin,
        blend_min_per_class=args.blend_min_per_class,
    )
    topics = tuple(t for t in args.topics.split(",") if t)
    report = trio.run(
        run_experiment,
        args.web,
        args.bookmarks,
        args.pages,
        not args.no_hub,
        focus,
        apprentice,
        args.critic_examples,
        args.cross_links,
        topics,
        not args.full_budget,
        args.protocol,
    )
    report["settings"] = {"focus": dataclasses.asdict(focus), "apprentice": dataclasses.asdict(apprentice)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
