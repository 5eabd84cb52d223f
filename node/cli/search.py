"""`topicswarm search`: ranked search over the data directory's repository (thesis chapter 4)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from crawler.charsets import without_controls
from crawler.query import DEFAULT_USER, HIGHLIGHT, ORIGINS, SIGNALS, VERDICTS
from node.cli.common import (
    CliError,
    add_data_arg,
    api_errors,
    count,
    data_dir,
    existing_data_dir,
    node_client_or_none,
    open_repository,
    print_json,
)
from node.client import NodeClient
from node.wording import NOTHING_MATCHES, without_filters

if TYPE_CHECKING:  # searched straight from the repository only when no node runs: the API answers otherwise
    from crawler.repository import Repository
    from crawler.search import SearchResults

_MARKED = re.compile(re.escape(HIGHLIGHT[0]) + r"(.*?)" + re.escape(HIGHLIGHT[1]))


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "search",
        help="search the crawled pages (BM25, confidence and link authority, personalised by feedback)",
        description="Ranked search over the data directory's pages; through the node's API when a node "
        "runs there, else straight from the repository (same output).",
    )
    add_data_arg(parser)
    parser.add_argument(
        "query",
        nargs="*",
        help='words to look for, quoted or not; "a phrase", -word or -"a phrase" to leave pages out, '
        "site:HOST[/PATH]; none: the most confident results under the filters; with --fts: SQLite FTS5 "
        "query syntax",
    )
    parser.add_argument("--limit", type=count, default=10, metavar="N", help="most hits shown (default 10)")
    parser.add_argument("--offset", type=count, default=0, metavar="N", help="skip the first N hits (paging)")
    parser.add_argument(
        "--topic", metavar="KEY", help='only this topic and its subtopics, e.g. "Science/Math"'
    )
    parser.add_argument("--exact-topic", action="store_true", help="with --topic: leave its subtopics out")
    parser.add_argument(
        "--verdict",
        choices=VERDICTS,
        default="accepted",
        help="verdict filter (default: accepted into a topic, kept or unjudged by the restrictive verdict)",
    )
    parser.add_argument(
        "--origin", choices=ORIGINS, default="any", help="own crawl, pooled from peers, or both"
    )
    parser.add_argument(
        "--weights",
        metavar="SIGNAL=W,...",
        help=f"ranking weights of {', '.join(SIGNALS)} (default: fitted to your feedback, else all 1)",
    )
    parser.add_argument("--user", default=DEFAULT_USER, help="whose feedback personalises the ranking")
    parser.add_argument("--json", action="store_true", help="one JSON object per hit (the API's hit shape)")
    parser.add_argument(
        "--fts", action="store_true", help='the query is FTS5 syntax (AND, OR, NOT, "phrases", prefix*)'
    )
    parser.set_defaults(func=run, words_from_dashes=True)


def open_crawled_repository(args: argparse.Namespace) -> Repository:
    data = existing_data_dir(args)
    if not data.repository.exists():
        raise CliError(
            f"no repository at {data.repository}: nothing crawled yet; start a node with "
            f"`topicswarm node run --data {data.root}` (after `topicswarm topics import`) "
            "or crawl with `topicswarm crawl --seed URL`"
        )
    return open_repository(data.repository)


def search_from_args(repo: Repository, args: argparse.Namespace, previews: bool = True) -> SearchResults:
    """The ranked search the command-line options describe (shared with `topicswarm export --query`)."""
    from crawler.feedback import personal_weights
    from crawler.ranking import RankingError, RankingWeights
    from crawler.search import SearchError, ranked_search

    try:
        weights = RankingWeights.parse(args.weights) if args.weights else personal_weights(repo, args.user)
        return ranked_search(
            repo,
            args.query,
            topic=args.topic,
            include_descendants=not args.exact_topic,
            verdict=args.verdict,
            origin=args.origin,
            weights=weights,
            limit=args.limit,
            offset=args.offset,
            syntax="fts5" if args.fts else "plain",
            previews=previews,
        )
    except (SearchError, RankingError) as exc:
        raise CliError(str(exc)) from exc


def run(args: argparse.Namespace) -> int:
    """Through the node's API when a node runs on the data directory (its repository has one writer),
    directly otherwise; both print the API's hit shape the same way."""
    args.query = " ".join(args.query)  # `search sql join` reads as `search "sql join"`
    if args.exact_topic and not args.topic:  # it was ignored without a word
        raise CliError("--exact-topic leaves a topic's subtopics out, so it needs --topic KEY")
    client = node_client_or_none(data_dir(args))
    if client is not None:
        with api_errors(), client:
            answer = _search_through(client, args)
            if _narrowed_to_nothing(answer, args):
                answer["widened_total"] = _search_through(client, widened(args))["total"]
    else:
        repo = open_crawled_repository(args)
        try:
            answer = search_from_args(repo, args).to_api()
            if _narrowed_to_nothing(answer, args):
                answer["widened_total"] = search_from_args(repo, widened(args), previews=False).total
        finally:
            repo.close()
    print_hits(answer, args)
    return 0


def _narrowed_to_nothing(answer: dict, args: argparse.Namespace) -> bool:
    return not answer["total"] and not args.json and bool(narrowing_filters(args))


def widened(args: argparse.Namespace) -> argparse.Namespace:
    """The same search with no filter, to tell a user whose filters left nothing whether any page matches."""
    return argparse.Namespace(**{**vars(args), "topic": None, "origin": "any", "verdict": "any", "limit": 0})


def _search_through(client: NodeClient, args: argparse.Namespace) -> dict:
    return client.search(
        args.query,
        topic=args.topic,
        include_descendants=not args.exact_topic,
        origin=args.origin,
        verdict=args.verdict,
        limit=args.limit,
        offset=args.offset,
        weights=args.weights,
        user=args.user,
        syntax="fts5" if args.fts else "plain",
    )


def print_hits(answer: dict, args: argparse.Namespace) -> None:
    """Hits in the API's shape: one JSON object per hit with --json, else a ranked list."""
    hits = answer["hits"]
    if args.json:
        for hit in hits:
            print_json(hit)
        return
    if not hits and answer["total"]:  # --offset past the last one, or --limit 0
        print(f"none of {answer['total']} results shown with --offset {args.offset} --limit {args.limit}")
        return
    if not hits:
        print(no_hits_text(args, answer.get("widened_total")))
        return
    if answer.get("prefix"):
        print(prefix_note(args.query, "these results include"))
    if answer.get("browsed"):
        print(browse_heading(args))
    bold = sys.stdout.isatty()
    for rank, hit in enumerate(hits, start=1 + args.offset):
        confidence = f"{hit['confidence']:.2f}" if hit["confidence"] is not None else "-"
        # a repository filled before pages lost their control characters may still hold some
        title = without_controls(hit["title"]) or "(no title)"
        print(f"{rank:>2}. {title}  [{hit['score']:.3f}]\n    {hit['url']}")
        origins = ", ".join(hit["origins"])
        print(f"    {hit['topic'] or '-'}  conf {confidence}  from {origins}  doc {hit['doc_id']}")
        print(f"    {render(without_controls(' '.join(hit['preview'].split())), bold)}")
    print(f"{len(hits)} of {answer['total']} results (`topicswarm show DOC`: the stored page)")


def prefix_note(query: str, shown: str) -> str:
    """Results that include words the query's words start (`ranked_search` widened a sparse answer)."""
    return f"few pages have the words {query!r}; {shown} words that start with them"


def browse_heading(args: argparse.Namespace) -> str:
    """What a search without words lists, so its order is not read as an answer to words."""
    of = f" of --topic {args.topic}" if args.topic else ""
    matching = f" for {args.query.strip()!r}" if args.query.strip() else ""
    ranked = "no words to search for: ranked by confidence and links"
    return f"the most confident results{of}{matching} ({ranked})"


def no_hits_text(args: argparse.Namespace, widened_total: int | None = None) -> str:
    """No hits, with the filters that narrowed the search and how to widen them (a bare "no hits" left a
    user of `--origin pooled` on an offline node, or of the default verdict filter, guessing), unless
    the search without them (`widened_total`) found nothing either: then no filter is to blame."""
    narrowing = narrowing_filters(args)
    none = f"no hits for {args.query!r}" if args.query.strip() else "no results"
    if not narrowing:
        return none if args.query.strip() else f"{none}: nothing stored yet"
    if widened_total == 0:
        return f"{none}: {NOTHING_MATCHES}" if args.query.strip() else f"{none}: nothing stored yet"
    return f"{none} with {', '.join(narrowing)}{without_filters(widened_total)}"


def narrowing_filters(args: argparse.Namespace) -> list[str]:
    """The filters of the search that leave pages out, each with how to widen it."""
    narrowing = []
    if args.topic:
        narrowing.append(f"--topic {args.topic}")
    if args.origin != "any":
        narrowing.append(f"--origin {args.origin} (try --origin any)")
    if args.verdict != "any":
        narrowing.append(f"--verdict {args.verdict} (try --verdict any)")
    return narrowing


def render(preview: str, bold: bool) -> str:
    """Highlighted query terms: bold on a terminal, kept as [[term]] markers otherwise."""
    return _MARKED.sub(lambda m: f"\033[1m{m.group(1)}\033[0m", preview) if bold else preview
