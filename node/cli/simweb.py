"""`topicswarm simweb serve`: serve a simulated web on loopback by hand until Ctrl-C."""

from __future__ import annotations

import argparse
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from node.cli.common import CliError

WEBS = Path(__file__).resolve().parents[2] / "simnet" / "webs"

if TYPE_CHECKING:
    from simnet.web import FaultPlan, ServedWeb, WebCorpus


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("simweb", help="serve a simulated web (real pages on loopback, faults on demand)")
    actions = parser.add_subparsers(dest="simweb_action", metavar="ACTION", required=True)
    serve = actions.add_parser("serve", help="serve a web until Ctrl-C, printing the hub and site URLs")
    serve.add_argument("--web", default="fixture", help="fixture, devweb, webkb or a web corpus folder")
    serve.add_argument("--port", type=int, default=0, help="the port every host shares (default: any free)")
    serve.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND:HOST[:PATH][,key=value...]",
        help="inject a fault, e.g. slow:python,delay=0.5 or robots:sqlite:/c3ref/,crawl_delay=2",
    )
    serve.add_argument(
        "--sitemaps", action="store_true", help="serve a sitemap per site, named in its robots.txt"
    )
    serve.add_argument(
        "--feeds",
        action="store_true",
        help="serve an Atom feed of its newest pages per site at /feed.xml, named in every page's head",
    )
    serve.add_argument(
        "--bookmarks-out",
        type=Path,
        default=None,
        metavar="FILE",
        help="write the web's bookmarks (simnet/webs/WEB-bookmarks.html, or --bookmarks) with their URLs "
        "mapped to the served web, ready for `topicswarm topics import`",
    )
    serve.add_argument(
        "--bookmarks",
        type=Path,
        default=None,
        metavar="FILE",
        help="the bookmarks --bookmarks-out maps (any browser's file)",
    )
    serve.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    import trio

    from crawler.taxonomy import TaxonomyError, bookmarks_html
    from simnet.paths import SharedDataMissing
    from simnet.web import FaultPlan, WebError, load_web, parse_fault, serve_web

    try:
        plan = FaultPlan(parse_fault(spec) for spec in args.fault)
        corpus = load_web(args.web)
    except (WebError, SharedDataMissing) as exc:
        raise CliError(str(exc)) from exc
    source = args.bookmarks or WEBS / f"{args.web}-bookmarks.html"
    if args.bookmarks_out is not None and not source.is_file():
        raise CliError(f"no bookmarks at {source}: give the file to map with --bookmarks FILE")
    try:
        bookmarks = bookmarks_html(source) if args.bookmarks_out is not None else ""
    except TaxonomyError as exc:
        raise CliError(str(exc)) from exc

    async def serve() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with serve_web(corpus, plan, args.port, sitemaps=args.sitemaps, feeds=args.feeds) as web:
                if args.bookmarks_out is not None:
                    write_bookmarks(web, bookmarks, args.bookmarks_out)
                print_web(web, corpus, plan)
                async for _ in signals:
                    break

    try:
        trio.run(serve)
    except WebError as exc:
        raise CliError(str(exc)) from exc
    print("stopped")
    return 0


def write_bookmarks(web: ServedWeb, bookmarks: str, out: Path) -> None:
    """The bookmarks (Netscape HTML text) with their upstream URLs (https://www.postgresql.org/docs/...)
    replaced by the served web's, so a node can import them and crawl the simulated web without the
    Internet."""
    from node.cli.demo import map_bookmarks

    out.write_text(map_bookmarks(bookmarks, web.map_upstream), encoding="utf-8")
    print(f"bookmarks {out} (import with `topicswarm topics import --data DIR {out}`)")


def print_web(web: ServedWeb, corpus: WebCorpus, plan: FaultPlan) -> None:
    print(f"hub      {web.hub_url}")
    for site in corpus.sites:
        print(f"{site.name:<20} {site.group:<12} {web.site_url(site)}")
    for fault in plan.faults:
        print(f"fault    {fault.to_dict()}")
    print("serving; Ctrl-C stops", flush=True)
