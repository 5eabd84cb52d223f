"""A testing toolkit for the cooperation layer: synthetic topic documents and small repositories."""

from __future__ import annotations

import hashlib
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
import trio

from crawler.repository import Repository
from crawler.taxonomy import FETCHED, NEGATIVE, POSITIVE, Taxonomy, TrainingDocument, store_taxonomy
from node.cooperation.settings import CooperationSettings

VOCABULARY = {
    "Databases": [
        "query",
        "index",
        "table",
        "sql",
        "join",
        "transaction",
        "postgres",
        "schema",
        "row",
        "column",
        "btree",
    ],
    "Mathematics": [
        "matrix",
        "integral",
        "vector",
        "algebra",
        "theorem",
        "proof",
        "equation",
        "derivative",
        "calculus",
    ],
    "": [
        "python",
        "git",
        "function",
        "module",
        "class",
        "package",
        "commit",
        "branch",
        "tutorial",
        "install",
    ],
}
COMMON = ["the", "page", "about", "general", "information", "and", "some", "notes", "for", "reading", "here"]


def synthetic_text(topic: str, rng: np.random.Generator, words: int = 60, noise: float = 0.5) -> str:
    own = VOCABULARY[topic]
    pool = [w for t, v in VOCABULARY.items() if t != topic for w in v]
    chosen = [
        rng.choice(own) if rng.random() > noise else rng.choice(pool if rng.random() < 0.3 else COMMON)
        for _ in range(words)
    ]
    return " ".join(str(w) for w in chosen)


def synthetic_taxonomy(node: int, per_topic: int = 8, seed: int = 0) -> Taxonomy:
    """Two topics and an OTHERS folder; each node gets its own documents (URLs differ per node)."""
    rng = np.random.default_rng(seed * 1000 + node)
    docs = []
    for topic in ("Databases", "Mathematics", ""):
        for i in range(per_topic):
            polarity = NEGATIVE if topic == "" else POSITIVE
            url = f"http://127.0.0.1/{topic or 'others'}/{node}-{i}.html"
            text = synthetic_text(topic, rng)
            docs.append(
                TrainingDocument(topic, polarity, url=url, title=f"{topic} {i}", text=text, status=FETCHED)
            )
    return Taxonomy(("Databases", "Mathematics"), tuple(docs), "synthetic")


def add_crawled(repo: Repository, node: int, per_topic: int = 20, seed: int = 0) -> dict[int, str]:
    """Crawled documents filed in both topics (some of them wrongly); doc id -> true topic."""
    rng = np.random.default_rng(seed * 7 + node + 100)
    truth = {}
    with repo.transaction() as db:
        for topic in ("Databases", "Mathematics", ""):
            for i in range(per_topic):
                url = f"http://127.0.0.1/crawl/{node}/{topic or 'others'}/{i}"
                filed = topic or ("Databases" if i % 2 else "Mathematics")
                text = synthetic_text(topic, rng, noise=0.6)
                truth[add_document(db, url, f"{topic} page {i}", text, filed)] = topic
    return truth


def add_mixed(repo: Repository, filed: str, count: int = 10, seed: int = 0) -> list[int]:
    """Crawled documents on both topics, from mostly Databases to mostly Mathematics words, all filed in
    `filed`: pages two sibling topics both accept."""
    rng = np.random.default_rng(seed)
    ids = []
    with repo.transaction() as db:
        for i in range(count):
            share = 0.3 + 0.4 * i / max(count - 1, 1)  # of Mathematics words
            topics = ["Mathematics" if rng.random() < share else "Databases" for _ in range(60)]
            text = " ".join(str(rng.choice(VOCABULARY[t])) for t in topics)
            ids.append(add_document(db, f"http://127.0.0.1/mixed/{i}", f"mixed page {i}", text, filed))
    return ids


def add_document(db: Any, url: str, title: str, text: str, filed: str) -> int:
    """One fetched document filed (accepted) in a topic, inside the caller's transaction; its id."""
    cursor = db.conn.execute(
        "INSERT INTO documents (url, final_url, host, status, title, text, fingerprint, "
        "fetched_at, topic, confidence, accepted) "
        "VALUES (?, ?, '127.0.0.1', 200, ?, ?, ?, ?, ?, 0.5, 1)",
        [url, url, title, text, hashlib.blake2b(url.encode()).hexdigest()[:32], time.time(), filed],
    )
    return int(cursor.lastrowid)


def make_repository(path: Path, node: int, crawled: int = 20) -> dict[int, str]:
    with Repository(path) as repo:
        store_taxonomy(repo, synthetic_taxonomy(node))
        return add_crawled(repo, node, crawled)


def crawl_result(url: str, origin: str, topic: str = "Databases") -> Any:
    """A peer's crawl result as the sync protocol carries it (unsigned: for the repository's side)."""
    from p2p.messages.results import CrawlResult

    return CrawlResult(
        url=url,
        title="t",
        preview="a preview",
        fingerprint="f" * 32,
        fetched_at=1.0,
        topic=topic,
        confidence=0.9,
        origin=origin,
    )


def fast_settings(**overrides: Any) -> CooperationSettings:
    values: dict[str, Any] = {"sync_interval": 0.5, "request_timeout": 5.0, "hub_seeds": 0}
    values.update(overrides)
    return CooperationSettings(**values)


@asynccontextmanager
async def running_nodes(
    tmp: Path, n: int, *, hostile: Sequence[int] = (), crawled: int = 20, start: bool = True
) -> AsyncIterator[list[Any]]:
    """n Cooperation instances over real `P2PService`s on loopback, each with its own synthetic repository,
    all joining through the first. Rounds run in the background when `start` is true."""
    import dataclasses

    from node.cooperation.service import Cooperation
    from p2p.service import start_service
    from p2p.settings import P2PSettings

    settings = dataclasses.replace(
        P2PSettings(), listen_addrs=("/ip4/127.0.0.1/tcp/0",), dht_enabled=False, exchange_period=1.0
    )
    async with AsyncExitStack() as stack:
        nodes = []
        bootstrap: tuple[str, ...] = ()
        for i in range(n):
            network = await stack.enter_async_context(
                start_service(dataclasses.replace(settings, bootstrap=bootstrap))
            )
            bootstrap = bootstrap or (network.addrs()[0],)
            path = tmp / f"node{i}" / "repository.sqlite"
            make_repository(path, i, crawled)
            nodes.append(Cooperation(path, network, fast_settings(hostile=i in hostile)))
        nursery = await stack.enter_async_context(trio.open_nursery())
        for coop in nodes:
            if start:
                await nursery.start(coop.run)
        try:
            yield nodes
        finally:
            nursery.cancel_scope.cancel()
            if not start:
                for coop in nodes:
                    coop.close()
