"""Precision at 10 of the ranking combinations before and after simulated feedback (thesis 4.1.4).

    python -m simnet.experiments.ranking --web devweb --bookmarks simnet/webs/devweb-bookmarks.html

Crawls the served web with the focused crawler (archetypes and retraining) from the bookmarks' pages and
the hub, computes link scores (HITS authority, extended PageRank with virtual links) per topic, then for
each topic asks topical queries derived from its bookmarked pages alone: the topic's top terms by MI
against the other topics' and OTHERS pages (single terms and pairs). Each query runs in the topic's view
(`context`: the topic's confidence and link scores count, nothing is filtered out) and is judged against
the web's ground truth: a result is relevant when its site's group is the topic's target group.

Variants: BM25 alone, BM25 + confidence, the full combination (BM25, confidence, authority, PageRank).
"After feedback": a simulated user marks the first page of results of the topic's *other* queries
(relevant or not, from the ground truth); the variant's weights are refitted to those marks by least
squares (eq. 4.8, over the variant's own signals) and the held-out query is ranked again, so no query is
judged with weights fitted to its own marks. Prints a table and a final JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import trio

from crawler.feedback import feedback_of, fit_weights, record_feedback, training_pairs
from crawler.focus import FocusSettings, in_subtree
from crawler.preview import topic_term_weights
from crawler.query import SIGNALS
from crawler.ranking import TEXT_AND_CONFIDENCE, TEXT_ONLY, RankingWeights, update_link_scores
from crawler.repository import Repository
from crawler.search import ranked_search
from crawler.taxonomy import Taxonomy, read_taxonomy
from metamodels.features import FeatureConfig, Featurizer, tokenize
from simnet.experiments.harvest import crawl_variant
from simnet.experiments.webrun import add_web_arguments, prepare_training
from simnet.web import load_web, serve_web_in_subprocess

VARIANTS = {"bm25": TEXT_ONLY, "bm25+conf": TEXT_AND_CONFIDENCE, "full": RankingWeights()}
K = 10
TERMS_PER_TOPIC = 6


def topical_queries(taxonomy: Taxonomy, topic: str, n_terms: int = TERMS_PER_TOPIC) -> list[str]:
    """The topic's top-MI terms from the training pages alone (as the words they most often come from),
    each alone and in consecutive pairs."""
    terms_of = Featurizer(FeatureConfig()).terms
    positives, negatives = taxonomy.training_texts()
    weights = topic_term_weights(terms_of, positives, negatives).get(topic, {})
    surface: dict[str, Counter] = {}
    for text in (t for key, texts in positives.items() if in_subtree(key, topic) for t in texts):
        for word in tokenize(text):
            for stem in terms_of(word):
                surface.setdefault(stem, Counter())[word] += 1
    best = [t for t in sorted(weights, key=lambda t: -weights[t]) if t in surface][:n_terms]
    words = [surface[t].most_common(1)[0][0] for t in best]
    return words + [f"{words[i]} {words[i + 1]}" for i in range(0, len(words) - 1, 2)]


def precision_at(urls: list[str], relevant_of: Any, k: int = K) -> float:
    return sum(1 for u in urls[:k] if relevant_of(u)) / k


def refit(marks: list, variant: RankingWeights) -> RankingWeights:
    """The variant's weights refitted to marks over its own signals (signals it does not use stay 0)."""
    X, y, s = training_pairs(marks)
    if len(y) == 0:
        return variant
    used = variant.as_array() != 0
    fitted = fit_weights(X * used, y, s, prior=variant).as_array()
    return RankingWeights.from_array(np.where(used, fitted, 0.0))


def evaluate(repo: Repository, topics: dict[str, str], taxonomy: Taxonomy, label_of: Any) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for topic, target in sorted(topics.items()):
        queries = topical_queries(taxonomy, topic)

        def relevant(url: str, target: str = target) -> bool:
            return label_of(url) == target

        user = f"simulated:{topic}"
        first_pages: dict[str, list] = {}
        for query in queries:
            hits = ranked_search(repo, query, context=topic, limit=K, previews=False, verdict="any").hits
            first_pages[query] = hits
            for hit in hits:
                kind = "relevant" if relevant(hit.url) else "irrelevant"
                signals = [hit.signals[name] for name in SIGNALS]
                record_feedback(repo, hit.doc_id, kind, query=query, user=user, signals=signals, train=False)
        marks = feedback_of(repo, user)
        per_query = []
        for query in queries:
            others = [m for m in marks if m.query != query]
            row = {"query": query, "hits": len(first_pages[query])}
            if not first_pages[query]:
                continue
            for name, weights in VARIANTS.items():
                for phase, used in (("before", weights), ("after", refit(others, weights))):
                    ranked = ranked_search(
                        repo, query, context=topic, weights=used, limit=K, previews=False, verdict="any"
                    )
                    row[f"{name}:{phase}"] = precision_at([h.url for h in ranked.hits], relevant)
            per_query.append(row)
        columns = [f"{n}:{p}" for n in VARIANTS for p in ("before", "after")]
        results[topic] = {
            "target_group": target,
            "queries": per_query,
            "mean": {
                c: round(float(np.mean([r[c] for r in per_query])), 4) if per_query else 0.0 for c in columns
            },
        }
    return results


async def run_experiment(web_name: str, bookmarks: Path, pages: int) -> dict[str, Any]:
    corpus = load_web(web_name)
    taxonomy = read_taxonomy(bookmarks)
    report: dict[str, Any] = {"web": corpus.name, "pages": pages}
    with serve_web_in_subprocess(corpus) as web:
        fetched, targets = await prepare_training(web, taxonomy)
        leaves = {t: g for t, g in targets.items() if t in fetched.leaves()}
        focus = FocusSettings(learning_pages=pages // 5, retrain_every=max(pages // 6, 1))
        with (
            tempfile.TemporaryDirectory(prefix="ranking-") as tmp,
            Repository(Path(tmp) / "repository.db") as repo,
        ):
            await crawl_variant("focused_retrain", repo, fetched, web.hub_url, pages, focus)
            report["documents"] = repo.document_count()
            scores = update_link_scores(repo, leaves)
            report["virtual_links"] = {t or "(all)": s.virtual_links for t, s in scores.items()}
            report["topics"] = evaluate(repo, leaves, fetched, web.label_of)
    columns = [f"{n}:{p}" for n in VARIANTS for p in ("before", "after")]
    topics = report["topics"].values()
    report["mean"] = {
        c: round(float(np.mean([t["mean"][c] for t in topics])), 4) if topics else 0.0 for c in columns
    }
    return report


def print_table(report: dict[str, Any]) -> None:
    columns = [f"{n}:{p}" for n in VARIANTS for p in ("before", "after")]
    print(f"P@{K} per topic (before / after simulated feedback on the other queries' first pages)")
    print(f"{'topic':<24}" + "".join(f"{c:>17}" for c in columns))
    for topic, row in report["topics"].items():
        print(f"{topic:<24}" + "".join(f"{row['mean'][c]:>17.3f}" for c in columns))
    print(f"{'mean':<24}" + "".join(f"{report['mean'][c]:>17.3f}" for c in columns))
    gain = report["mean"]["full:after"] - report["mean"]["bm25:before"]
    print(f"full combination with feedback vs BM25 alone: {gain:+.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m simnet.experiments.ranking", description=__doc__.split("\n")[0]
    )
    add_web_arguments(parser, 1500, "pages to crawl (default 1500)", hub=False)
    args = parser.parse_args(argv)
    report = trio.run(run_experiment, args.web, args.bookmarks, args.pages)
    print_table(report)
    summary = {
        "web": report["web"],
        "pages": report["pages"],
        "documents": report["documents"],
        "mean": report["mean"],
        "per_topic": {t: r["mean"] for t, r in report["topics"].items()},
        "queries": {t: [q["query"] for q in r["queries"]] for t, r in report["topics"].items()},
        "virtual_links": report["virtual_links"],
    }
    print(json.dumps(summary), flush=True)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
