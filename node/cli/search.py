"""`topicswarm search`: full-text search over the data directory's repository."""

from __future__ import annotations

import argparse
import dataclasses
import json

from crawler.repository import Repository, RepositoryError
from crawler.search import SearchError, search
from node.cli.common import CliError, add_data_arg, data_dir


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("search", help="search the crawled pages (BM25 over title and text)")
    add_data_arg(parser)
    parser.add_argument("query", help="words to look for (with --fts: SQLite FTS5 query syntax)")
    parser.add_argument("--limit", type=int, default=10, metavar="N", help="most hits shown (default 10)")
    parser.add_argument("--json", action="store_true", help="one JSON object per hit")
    parser.add_argument(
        "--fts", action="store_true", help='the query is FTS5 syntax (AND, OR, NOT, "phrases", prefix*)'
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data = data_dir(args)
    if not data.repository.exists():
        raise CliError(f"no repository at {data.repository}: crawl first with `topicswarm crawl --seed URL`")
    try:
        repo = Repository(data.repository)
    except RepositoryError as exc:
        raise CliError(str(exc)) from exc
    try:
        hits = search(repo, args.query, args.limit, syntax="fts5" if args.fts else "plain")
    except SearchError as exc:
        raise CliError(str(exc)) from exc
    finally:
        repo.close()
    if args.json:
        for hit in hits:
            print(json.dumps(dataclasses.asdict(hit), ensure_ascii=False))
        return 0
    if not hits:
        print("no hits")
        return 0
    for rank, hit in enumerate(hits, start=1):
        print(f"{rank:>2}. {hit.title or '(no title)'}\n    {hit.url}\n    {hit.snippet}")
    return 0
