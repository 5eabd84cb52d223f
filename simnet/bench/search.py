"""Search latency on a large repository: the full ranked search (filters, BM25 candidates, the signal
combination with link scores, collapsing, previews) over real documents.

    python -m simnet.bench.search --docs 100000

Documents come from 20 Newsgroups, Reuters-21578 and WebKB (simnet.corpora); past their ~48,000 texts
they repeat with variations (sentences shuffled, a tenth of the words dropped, a fresh seed per round), so
no two stored texts are equal. Topics are the corpus labels, confidences deterministic pseudo-random values,
and each page links to pages of its topic, so link scores come from a real HITS/PageRank run. The query
mix is drawn from the stored texts with a fixed seed: common and rare single terms, two-word phrases,
multi-term queries, each with and without a topic filter. Prints one JSON line: wall-clock percentiles
(`p50_ms`, `p95_ms`), the same in CPU time (`p95_cpu_ms`: comparable on a shared, loaded machine), and
`top10_overlap`, the mean share of each query's exact top 10 (BM25 scored on every match, the full
combination) that the bounded search returns too. `browse_p50_ms` and `browse_p95_ms` time searches without
words (the most confident results of all topics and of each topic, as the UI's Results screen opens).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from crawler.ranking import update_link_scores
from crawler.repository import LinkRecord, Repository, StoredPage
from crawler.search import ranked_search, text_document
from metamodels.features import stopwords
from simnet.corpora import Document, load_corpus

CORPORA = ("20ng", "reuters", "webkb")
LINKS_PER_PAGE = 5
QUERIES_PER_KIND = 25
BATCH = 2000
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[a-z]{3,}")


def source_documents() -> list[tuple[str, Document]]:
    docs = []
    for name in CORPORA:
        docs.extend((name, d) for d in load_corpus(name) if d.text.strip())
    return docs


def varied(text: str, rng: random.Random) -> str:
    """Another version of a text: sentences shuffled and about a tenth of the words dropped."""
    sentences = _SENTENCE.split(text)
    rng.shuffle(sentences)
    words = " ".join(sentences).split()
    return " ".join(w for w in words if rng.random() >= 0.1)


def generated(n: int, seed: int = 0) -> Iterator[tuple[str, str, str, str, float]]:
    """(url, title, text, topic, confidence) for n documents, repeating the corpora with variations."""
    sources = source_documents()
    rng = random.Random(seed)
    for i in range(n):
        round_, (corpus, doc) = divmod(i, len(sources))[0], sources[i % len(sources)]
        text = doc.text if round_ == 0 else varied(doc.text, rng)
        title = next((line.strip() for line in text.splitlines() if line.strip()), doc.id)[:120]
        label = doc.labels[0] if doc.labels else "unlabelled"
        url = f"http://{corpus}-{round_}.example/{i}"
        yield url, title, text, f"{corpus}/{label}", rng.uniform(-0.5, 1.5)


def build_repository(path: Path, n: int, seed: int = 0) -> dict[str, float]:
    """Store n documents with links among pages of one topic, then compute link scores."""
    rng = random.Random(seed + 1)
    started = time.perf_counter()
    by_topic: dict[str, list[str]] = {}
    rows = list(generated(n, seed))
    for url, _, _, topic, _ in rows:
        by_topic.setdefault(topic, []).append(url)
    with Repository(path) as repo:
        for start in range(0, n, BATCH):
            with repo.transaction():
                for url, title, text, topic, confidence in rows[start : start + BATCH]:
                    peers = by_topic[topic]
                    links = tuple(LinkRecord(rng.choice(peers), "") for _ in range(LINKS_PER_PAGE))
                    record = text_document(
                        url, title, text, near_duplicates=False, topic=topic, confidence=confidence
                    )
                    repo.insert_page(StoredPage(record, links))
        stored = time.perf_counter()
        topics = sorted(by_topic, key=lambda t: -len(by_topic[t]))[:3]
        update_link_scores(repo, topics)
        repo.db.execute("INSERT INTO documents_fts(documents_fts) VALUES ('optimize')")
    return {"store_s": stored - started, "link_scores_s": time.perf_counter() - stored}


def query_mix(repo: Repository, seed: int = 0) -> list[tuple[str, str | None]]:
    """Fixed, data-derived queries: (query, topic filter or None)."""
    rng = random.Random(seed + 2)
    sample = [
        row[0]
        for row in repo.db.execute("SELECT text FROM documents WHERE id % 97 = 0 ORDER BY id LIMIT 600")
    ]
    skip = stopwords("english")  # nobody searches for "its" alone; stopwords would only time FTS5 scans
    df = Counter(w for text in sample for w in set(_WORD.findall(text.lower())) if w not in skip)
    ranked = [w for w, _ in df.most_common()]
    common = ranked[:100]
    rare = [w for w, c in df.items() if c == 2]
    topics = [row[0] for row in repo.db.execute("SELECT DISTINCT topic FROM documents ORDER BY topic")]
    phrases = []
    for text in rng.sample(sample, min(len(sample), 200)):
        words = _WORD.findall(text.lower())
        if len(words) > 10:
            j = rng.randrange(len(words) - 1)
            phrases.append(f'"{words[j]} {words[j + 1]}"')
    kinds = {
        "common": [rng.choice(common) for _ in range(QUERIES_PER_KIND)],
        "rare": [rng.choice(rare) for _ in range(QUERIES_PER_KIND)],
        "phrase": phrases[:QUERIES_PER_KIND],
        "multi": [" ".join(rng.sample(common, 3)) for _ in range(QUERIES_PER_KIND)],
    }
    mix = []
    for queries in kinds.values():
        for q in queries:
            mix.append((q, None))
            mix.append((q, rng.choice(topics)))
    return mix


def top_overlap(got: tuple, expected: tuple) -> float:
    """Share of the expected hits (by document) that were also returned; 1.0 when none were expected."""
    wanted = {h.doc_id for h in expected}
    return len(wanted & {h.doc_id for h in got}) / len(wanted) if wanted else 1.0


def browse_latencies(repo: Repository, rounds: int = 3) -> list[float]:
    """Milliseconds of each search without words (every topic, then each one, `rounds` times), sorted."""
    topics = [row[0] for row in repo.db.execute("SELECT DISTINCT topic FROM documents ORDER BY topic")]
    times = []
    for _ in range(rounds):
        for topic in [None, *topics]:
            start = time.perf_counter()
            ranked_search(repo, "", topic=topic)
            times.append((time.perf_counter() - start) * 1000)
    return sorted(times)


def run(n: int, keep: Path | None, seed: int = 0) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = (keep or Path(tmp)) / "search-bench.db"
        build = {}
        if not path.exists():
            build = build_repository(path, n, seed)
        with Repository(path) as repo:
            docs = repo.document_count()
            mix = query_mix(repo, seed)
            for query, topic in mix[:20]:  # warm the page cache
                ranked_search(repo, query, topic=topic, syntax="fts5")
            times, cpu_times, overlaps = [], [], []
            for query, topic in mix:
                start, cpu_start = time.perf_counter(), time.process_time()
                bounded = ranked_search(repo, query, topic=topic, syntax="fts5")
                times.append((time.perf_counter() - start) * 1000)
                cpu_times.append((time.process_time() - cpu_start) * 1000)
                exact = ranked_search(
                    repo, query, topic=topic, syntax="fts5", previews=False, bm25_budget=docs
                )
                overlaps.append(top_overlap(bounded.hits, exact.hits))
            browse_times = browse_latencies(repo)
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    times.sort()
    cpu_times.sort()
    return {
        "docs": docs,
        "queries": len(times),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))], 2),
        "max_ms": round(times[-1], 2),
        "p50_cpu_ms": round(statistics.median(cpu_times), 2),
        "p95_cpu_ms": round(cpu_times[int(0.95 * (len(cpu_times) - 1))], 2),
        "top10_overlap": round(statistics.mean(overlaps), 3),
        "browse_queries": len(browse_times),
        "browse_p50_ms": round(statistics.median(browse_times), 2),
        "browse_p95_ms": round(browse_times[int(0.95 * (len(browse_times) - 1))], 2),
        "index_mb": round(size / 2**20, 1),
        **{k: round(v, 1) for k, v in build.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=int, default=100_000, help="documents to store (default 100000)")
    parser.add_argument("--keep", type=Path, help="build (or reuse) the repository in this folder")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    print(json.dumps(run(args.docs, args.keep, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
