"""`topicswarm crawl`: crawl from seed URLs into the data directory's repository, resumably.

Live progress goes to stderr: one updating line on a terminal, a line every few seconds otherwise (logs).
Re-running on the same data directory resumes the persisted frontier; `--max-pages` counts every document
in the repository, so re-running an interrupted command finishes the same crawl.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from crawler.focus_settings import STRATEGIES, FocusSettings
from crawler.settings import CrawlSettings
from node.cli.common import (
    CliError,
    add_data_arg,
    connect,
    count,
    data_dir_for_writing,
    http_url,
    listing_line,
    open_repository,
    print_json,
    revisit_line,
)
from node.config import ConfigError, load_config
from node.wording import counted, crawl_answer_text, readable

if TYPE_CHECKING:  # the crawler loads when a crawl runs: `crawl start|pause|stop` only ask the running node
    import trio

    from crawler.crawl_stats import CrawlStats
    from crawler.engine import Crawler
    from crawler.repository import Repository

PROGRESS_EVERY = 5.0  # seconds between progress lines when stderr is not a terminal


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("crawl", help="crawl the web from seed URLs into the repository (resumes)")
    add_data_arg(parser)
    parser.add_argument(
        "--seed", action="append", default=[], type=http_url, metavar="URL", help="a start URL (repeatable)"
    )
    parser.add_argument(
        "--max-pages",
        type=count,
        default=None,
        metavar="N",
        help="stop at N documents of this node's own crawl (pooled results do not count)",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="HOST",
        help="follow links only to this host, '.domain' or network such as 127.0.0.0/8 (repeatable)",
    )
    parser.add_argument("--quiet", action="store_true", help="no live progress, only the summary")
    parser.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=None,
        help="focused link priority (thesis 2.7) when topics are imported (default: [focus] strategy of "
        "config.toml, else classifier_bfs)",
    )
    parser.add_argument("--unfocused", action="store_true", help="ignore the imported topics: breadth-first")
    parser.add_argument(
        "--apprentice",
        action="store_true",
        help="focused crawls learn link priorities from the DOM around each link (apprentice_enabled)",
    )
    parser.add_argument(
        "action",
        nargs="?",
        choices=["start", "pause", "stop", "revisit"],
        help="control the running node's crawl instead (`topicswarm node run`): pause lets the requests in "
        "flight finish, stop cancels them at once (their links stay queued); revisit: fetch stored pages "
        "again now (--url URL, repeatable, or --all)",
    )
    parser.add_argument(
        "--url", action="append", default=[], metavar="URL", help="with revisit: a stored page"
    )
    parser.add_argument("--all", action="store_true", help="with revisit: every page the node revisits")
    parser.add_argument("--topic", default=None, help="with start/pause/stop: only this topic")
    parser.add_argument("--json", action="store_true", help="with an action: print the answer as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    data = data_dir_for_writing(args)
    if args.action is not None:
        return control_crawl(args)
    import trio

    from node.client import node_running
    from node.stored_state import score_links, waiting_hosts

    if args.url or args.all:
        raise CliError("--url and --all go with `topicswarm crawl revisit` (a running node)")
    if node_running(data):
        raise CliError(
            f"a node is running for {data.root} and crawls there: control it with "
            f"`topicswarm crawl start|pause|stop --data {data.root}`"
        )
    try:
        config = load_config(data.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    settings = config.crawler
    if args.allow:
        settings = dataclasses.replace(settings, allowed_hosts=(*settings.allowed_hosts, *args.allow))
    if args.max_pages is not None and args.max_pages < 0:
        raise CliError("--max-pages must be 0 or more")
    repo = open_repository(data.repository)
    try:
        policy = None if args.unfocused else focus_policy(repo, settings, args.strategy, config.focus)
        if policy is not None and (args.apprentice or settings.apprentice_enabled):
            from crawler.apprentice_focus import ApprenticeFocus

            policy = ApprenticeFocus(policy)
        elif policy is None and args.apprentice:
            raise CliError(
                "--apprentice needs topics: import them with `topicswarm topics import bookmarks.html`"
            )
        if policy is None and args.strategy is not None:
            raise CliError(
                "--strategy needs topics: import them with `topicswarm topics import bookmarks.html`"
            )
        progress = None if args.quiet else sys.stderr
        stats = trio.run(crawl, repo, settings, args.seed, args.max_pages, progress, None, policy)
        score_links(repo)  # search's authority and pagerank signals, as a running node keeps them
        beyond = getattr(policy, "beyond_tunnel", None) if stats.reason == "exhausted" else None
        left = beyond() if beyond is not None else None
        waiting = waiting_hosts(repo, time.time())
    finally:
        repo.close()
    print(summary(stats, left, config.focus.tunnel_depth, waiting))
    return 0


def control_crawl(args: argparse.Namespace) -> int:
    """`topicswarm crawl start|pause|stop [--topic T]`: asks the running node, which crawls."""
    if args.action == "revisit":
        return revisit_pages(args)
    if args.url or args.all:
        raise CliError("--url and --all go with `topicswarm crawl revisit`")
    with connect(args) as client:
        answer = client.crawl(args.action, args.topic)
    if args.json:
        print_json(answer)
        return 0
    print(crawl_answer_text(answer, args.topic))
    return 0


def revisit_pages(args: argparse.Namespace) -> int:
    """`topicswarm crawl revisit --url URL ... | --all`: fresh copies of stored pages, before new links."""
    if bool(args.url) == bool(args.all):
        raise CliError("name the pages to fetch again with --url URL (repeatable), or give --all")
    with connect(args) as client:
        answer = client.revisit(None if args.all else args.url)
    if args.json:
        print_json(answer)
        return 0
    due, them = counted(answer["due"], "stored page"), "it" if answer["due"] == 1 else "them"
    lines = [f"{due} due for a revisit now; the crawl fetches {them} before new links"]
    lines += [
        f"not revisited: {url} (not stored by this node's crawl, off-topic or a duplicate)"
        for url in answer["not_revisited"]
    ]
    if answer.get("detail"):
        lines.append(answer["detail"])
    print("\n".join(lines))
    return 0


async def crawl(
    repo: Repository,
    settings: CrawlSettings,
    seeds: list[str],
    max_pages: int | None,
    progress: TextIO | None,
    on_crawler: Callable[[Crawler], None] | None = None,
    policy: Any = None,
) -> CrawlStats:
    """Crawl under trio with SIGINT/SIGTERM as a graceful stop (a second signal stops at once). With a
    focus `policy` (crawler.focus.TopicFocus) its bookmarks are seeds of their topics."""
    import trio

    from crawler.engine import Crawler
    from crawler.focus import SEED_PRIORITY

    crawler = Crawler(repo, settings, policy=policy)
    try:
        if policy is not None:
            policy.attach(crawler)
            for topic, urls in policy.seeds().items():
                crawler.add_seeds(urls, topic=topic, priority=SEED_PRIORITY)
        if seeds:
            crawler.add_seeds(seeds, priority=SEED_PRIORITY if policy is not None else 1.0)
        if len(crawler.frontier) == 0 and crawler.revisit_due_in() > 0:
            detail = "the seeds were crawled before" if seeds else "give a start URL with --seed URL"
            raise CliError(f"nothing to crawl: the frontier is empty and no stored page is due ({detail})")
        if progress is not None:
            crawler.add_listener(ProgressPrinter(progress, extra=getattr(policy, "progress_text", None)))
        if on_crawler is not None:
            on_crawler(crawler)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_stop_on_signals, crawler, nursery.cancel_scope)
            stats = await crawler.run(max_pages)
            nursery.cancel_scope.cancel()
        if stats.reason == "disk_full":
            raise CliError(
                f"the disk holding {repo.path} is full: the crawl stopped with {stats.total_pages} pages "
                "stored and none lost; free some space and run the same command again to resume"
            )
        if policy is not None:
            policy.record_stats()  # the crawl's writes are over: store the last harvest rates
        return stats
    finally:
        await crawler.aclose()


async def _stop_on_signals(crawler: Crawler, scope: trio.CancelScope) -> None:
    import trio

    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        count = 0
        async for _ in signals:
            count += 1
            if count == 1:
                print("\nstopping: finishing in-flight pages (again to stop at once)", file=sys.stderr)
                crawler.stop()
            elif count == 2:
                cancelled = crawler.abandon_in_flight()
                print(
                    f"stopping at once: {counted(cancelled, 'request')} cancelled, their links kept "
                    "for the next run (again to quit at once)",
                    file=sys.stderr,
                )
            else:
                scope.cancel()


def focus_policy(
    repo: Repository, settings: CrawlSettings, strategy: str | None, focus: FocusSettings | None = None
) -> Any:
    """The focus policy of the imported topics (bookmarks fetched first if they were not), or None.
    `focus`: the configured `[focus]` settings; `strategy` (the CLI's --strategy) overrides theirs."""
    import trio

    from crawler.focus import TopicFocus
    from crawler.taxonomy import PENDING, load_keywords, load_taxonomy, store_taxonomy
    from node.cli.topics import fetch_training_pages

    taxonomy = load_taxonomy(repo)
    if taxonomy is None:
        return None
    if any(d.status == PENDING for d in taxonomy.documents):
        taxonomy = trio.run(fetch_training_pages, taxonomy, settings)
        store_taxonomy(repo, taxonomy)
    focus = focus or FocusSettings()
    if strategy:
        focus = dataclasses.replace(focus, strategy=strategy)
    try:
        return TopicFocus(taxonomy, focus, indicators=load_keywords(repo))
    except ValueError as exc:
        raise CliError(f"cannot train the topic model: {exc}") from exc


def progress_line(stats: CrawlStats) -> str:
    errors = ", ".join(f"{kind} {n}" for kind, n in stats.errors_by_kind.items()) or "none"
    return (
        f"pages {stats.pages} ({stats.total_pages} own stored)  {stats.recent_pages_per_s:.1f} pages/s  "
        f"frontier {stats.frontier_size}  in flight {stats.in_flight}  errors: {errors}"
    )


class ProgressPrinter:
    """Prints crawl statistics: rewrites one line on a terminal, prints a line now and then otherwise."""

    def __init__(
        self, stream: TextIO, every: float = PROGRESS_EVERY, extra: Callable[[], str] | None = None
    ) -> None:
        self.stream = stream
        self.extra = extra  # more to show, e.g. the focus policy's harvest rate per topic
        self.tty = stream.isatty()
        self.every = every
        self._last = -float("inf")

    def __call__(self, stats: CrawlStats) -> None:
        line = progress_line(stats)
        if self.extra is not None and self.extra():
            line = f"{line}  {self.extra()}"
        if self.tty:
            end = "\n" if stats.finished else ""
            self.stream.write("\r\x1b[2K" + line + end)
            self.stream.flush()
            return
        now = time.monotonic()
        if stats.finished or now - self._last >= self.every:
            self._last = now
            print(line, file=self.stream, flush=True)


def summary(
    stats: CrawlStats,
    beyond_tunnel: tuple[int, bool] | None = None,
    tunnel_depth: int = 0,
    waiting: dict[str, Any] | None = None,
) -> str:
    """The crawl's figures when it ends; `beyond_tunnel` (`TopicFocus.beyond_tunnel`) for a focused crawl
    that ran out of links: what a deeper tunnel would have followed; `waiting` (`waiting_hosts`): the
    links of hosts that failed repeatedly, which a later crawl tries again."""
    reasons = {
        "max_pages": "reached --max-pages",
        "exhausted": "frontier exhausted",
        "stopped": "stopped",
        "blocked": "every queued host failed repeatedly; its links stay queued for the host's next try",
    }
    lines = [
        f"crawl finished: {reasons.get(stats.reason, stats.reason or 'done')}",
        f"  pages stored     {stats.pages} in {stats.elapsed:.1f} s ({stats.pages_per_s:.1f} pages/s); "
        f"{stats.total_pages} of this node's crawl in the repository",
        f"  fetches          {stats.fetches} ({stats.bytes / 1e6:.1f} MB of pages)",
        f"  duplicates       {stats.duplicates} exact, {stats.near_duplicates} near",
        f"  frontier         {stats.frontier_size} queued",
        f"  errors           {stats.errors}",
    ]
    if beyond_tunnel and beyond_tunnel[0]:
        links = f"{'at least ' if beyond_tunnel[1] else ''}{beyond_tunnel[0]}"
        lines.append(
            f"  left behind      {links} links past pages the classifier rejected, beyond "
            f"focus.tunnel_depth ({tunnel_depth} hops): raise it in config.toml to follow them"
        )
    if stats.relisted:
        lines.append(f"  tried again      {stats.relisted} failed URLs that a sitemap or feed dated later")
    if waiting and waiting["hosts"]:
        wait = waiting["next_try_in_s"]
        when = f"in {readable(wait)}" if wait else "now"
        lines.append(
            f"  waiting          {counted(waiting['links'], 'link')} of "
            f"{counted(waiting['hosts'], 'host')} that failed repeatedly; the next is tried again {when}: "
            "run the crawl again then"
        )
    if stats.revisits:
        lines.insert(4, f"  revisits         {revisit_line(stats.revisits, stats.changed, stats.gone)}")
    if stats.feeds or stats.feeds_unchanged:
        line = listing_line("feed", stats.feeds, stats.feed_urls, stats.feeds_unchanged)
        lines.insert(4, f"  feeds            {line}")
    if stats.sitemaps or stats.sitemaps_unchanged:
        line = listing_line("sitemap", stats.sitemaps, stats.sitemap_urls, stats.sitemaps_unchanged)
        lines.insert(4, f"  sitemaps         {line}")
    lines.extend(f"    {kind:<20} {n}" for kind, n in stats.errors_by_kind.items())
    return "\n".join(lines)
