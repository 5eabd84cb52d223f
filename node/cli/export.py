"""`topicswarm export`: documents or search results as JSON lines or CSV, crawled pages as WARC."""

from __future__ import annotations

import argparse
from pathlib import Path

from crawler.export import FORMATS, ExportError, export
from crawler.query import DEFAULT_USER
from crawler.repository import Repository
from node.cli.common import CliError, add_data_arg, count
from node.cli.search import open_crawled_repository, prefix_note, search_from_args
from node.wording import counted


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("export", help="export documents or search results (jsonl, csv) or pages (warc)")
    add_data_arg(parser)
    parser.add_argument(
        "--format", choices=FORMATS, required=True, help="jsonl, csv or warc (.warc.gz: gzipped)"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="the file to write")
    parser.add_argument("--topic", metavar="KEY", help="only this topic and its subtopics")
    parser.add_argument("--query", help="export this search's results instead of every document")
    parser.add_argument("--limit", type=count, default=1000, metavar="N", help="with --query: most results")
    parser.set_defaults(func=run, offset=0, exact_topic=False, verdict="accepted", origin="any", weights=None)
    parser.set_defaults(user=DEFAULT_USER, fts=False)


def run(args: argparse.Namespace) -> int:
    repo = open_crawled_repository(args)
    try:
        if args.topic:
            require_topic(repo, args.topic)
        rows = ids = None
        unmatched = ""
        if args.query:
            results = search_from_args(repo, args, previews=args.format != "warc")
            rows = [hit.to_api() for hit in results.hits]
            ids = [hit.doc_id for hit in results.hits]
            if results.prefix and results.hits:
                print(prefix_note(args.query, "exporting pages with"))
            if not results.total:
                unmatched = nothing_matched(repo, args)
        count = export(repo, args.out, args.format, topic=args.topic, ids=ids, rows=rows)
    except ExportError as exc:
        raise CliError(str(exc)) from exc
    finally:
        repo.close()
    print(f"wrote {counted(count, 'page' if args.format == 'warc' else 'row')} to {args.out}{unmatched}")
    return 0


def nothing_matched(repo: Repository, args: argparse.Namespace) -> str:
    """Why an export of a query wrote nothing (a bare "wrote 0 rows" read as a failed export): the query
    matched nothing, and with --topic, whether the topic is why (as `search` says of its filters)."""
    said = f": the query {args.query!r} matched nothing"
    if not args.topic:
        return said
    anywhere = search_from_args(repo, argparse.Namespace(**{**vars(args), "topic": None, "limit": 0}), False)
    if not anywhere.total:
        return f"{said}, in --topic {args.topic} or any other"
    return f"{said} in --topic {args.topic}; {counted(anywhere.total, 'result')} without it"


def require_topic(repo: Repository, key: str) -> None:
    """An unknown --topic is an error rather than an empty file (a typo would look like no documents)."""
    from crawler.taxonomy import load_taxonomy, unknown_topic

    taxonomy = load_taxonomy(repo)
    if taxonomy is None or key not in taxonomy.topics:
        raise CliError(unknown_topic(key, taxonomy.topics if taxonomy else ()))
