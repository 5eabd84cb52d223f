"""`topicswarm status`: what the running node does, or what a stopped one stored and how it resumes."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from node.cli.common import (
    add_client_args,
    connect,
    data_dir,
    listing_line,
    open_repository,
    print_json,
    revisit_line,
)
from node.client import NodeStopping, NodeUnreachable, node_address
from node.datadir import DataDir
from node.wording import (
    HARVEST_MEANS,
    clipped,
    counted,
    finishing_first,
    held_topics_text,
    readable,
    start_held,
)

NOT_RUNNING = 3  # `status` when no node runs (an init script's status code); it shows what is stored
LISTED_TOPICS = 12  # a status lists each topic's harvest up to this many topics
LOWEST_TOPICS = 5  # ...and past them, the topics of the lowest harvest
TOPIC_WIDTH = 48  # longer topic keys are clipped in the middle, keeping the top and the leaf


def register(sub: argparse._SubParsersAction) -> None:
    status = sub.add_parser(
        "status",
        help="what the running node is doing; when none runs, what it stored (exit code 3)",
        description="What the running node is doing. When no node runs for --data: what it stored (pages, "
        "links queued, harvest, its last run's errors, the peers it rejoins) and the state its crawl resumes "
        "in, with exit code 3.",
    )
    add_client_args(status)
    status.set_defaults(func=run_status)


def run_status(args: argparse.Namespace) -> int:
    data = data_dir(args)
    why = _why_not_running(data)
    if why is not None:
        return run_stopped_status(args, data, why)
    with connect(args) as client:
        status = client.status()
    if args.json:
        print_json(status)
        return 0
    crawl = status["crawl"]
    lines = [
        f"peer       {status['peer_id'] or '(offline)'}",
        f"api        {status.get('api', '')}   up {status['uptime_s']:.0f} s",
        *crawl_lines(crawl),
        f"errors     {_errors(crawl['errors_by_kind'])}",
        *_stored_lines(status, peer_lines(status)),
    ]
    print("\n".join(lines))
    return 0


def _why_not_running(data: DataDir) -> str | None:
    """Why no node runs for the data directory `data`; None when one runs or stops there, or when there is
    no such directory (connecting says so)."""
    try:
        node_address(data)
    except NodeStopping:
        return None
    except NodeUnreachable as exc:
        return str(exc) if data.root.is_dir() else None
    return None


def run_stopped_status(args: argparse.Namespace, data: DataDir, why: str) -> int:
    """What a node that does not run stored, and the state it resumes in; exit code NOT_RUNNING."""
    from node.metrics import RUNNING
    from node.stored_state import stopped_status

    if not data.repository.exists():
        if args.json:
            print_json({"running": False, "data_dir": str(data.root), "why": why})
        else:
            print(f"node       {why}")
            print(f"stored     nothing yet: `topicswarm topics import --data {data.root} FILE`")
        return NOT_RUNNING
    repo = open_repository(data.repository)
    try:
        status = stopped_status(data, repo)
    finally:
        repo.close()
    if args.json:
        print_json({**status, "why": why})
        return NOT_RUNNING
    crawl = status["crawl"]
    lines = [f"node       {why}", _stopped_crawl_line(crawl)]
    if crawl["resumes"] == RUNNING:
        lines += held_topics_lines(crawl.get("held_topics"), crawl.get("held_links", 0))
    lines += waiting_hosts_lines(crawl["hosts_waiting"])
    sample = crawl["last_sample"]
    if sample:
        ago = readable(max(0.0, time.time() - sample["t"]))
        at = time.strftime("%Y-%m-%d %H:%M", time.localtime(sample["t"]))
        lines.append(f"           last ran {at} ({ago} ago)")
        lines.append(f"errors     {_errors(sample['errors'])} (its last run)")
    lines += _stored_lines(status, _known_peer_lines(status))
    print("\n".join(lines))
    return NOT_RUNNING


def _stopped_crawl_line(crawl: dict[str, Any]) -> str:
    """The links a stopped node has queued and the state its crawl resumes in; before it first ran, the
    bookmarks it queues when it starts (nothing queued is not a failure then)."""
    from node.metrics import RUNNING

    state = crawl["resumes"]
    if state == RUNNING:
        resumes = "the crawl resumes when the node starts"
    else:
        resumes = f"the crawl stays {state} when the node starts (`topicswarm crawl start` resumes it)"
    bookmarks = crawl.get("bookmarks_to_queue")
    if crawl["frontier_size"] or not bookmarks:
        return f"crawl      {crawl['frontier_size']} links queued; {resumes}"
    queues = f"nothing queued yet: the node queues the imported topics' {counted(bookmarks, 'bookmark')}"
    if state == RUNNING:
        return f"crawl      {queues} when it starts and crawls from them"
    return f"crawl      {queues} when it starts; {resumes}"


def held_topics_lines(held: dict[str, str] | None, links: int) -> list[str]:
    """The topics the user paused or stopped while the crawl runs for the others, the links they hold and
    how to start one (none held: no line). A running node's status and a stopped one's say it alike."""
    if not held:
        return []
    holding = f", holding {counted(links, 'queued link')}" if links else ""
    return [f"           not crawled: {held_topics_text(held)}{holding}; {start_held(held)}"]


def waiting_hosts_lines(waiting: dict[str, Any] | None) -> list[str]:
    """The hosts that failed repeatedly and the links waiting for their next try (none: no line)."""
    if not waiting or not waiting["hosts"]:
        return []
    hosts = counted(waiting["hosts"], "host")
    wait = waiting["next_try_in_s"]
    when = f"the next in {readable(wait)}" if wait else "the next as soon as the crawl runs"
    return [f"           {hosts} failed repeatedly: {waiting['links']} links wait for a try, {when}"]


def _errors(by_kind: dict[str, int]) -> str:
    return ", ".join(f"{kind} {n}" for kind, n in by_kind.items()) or "none"


def _stored_lines(status: dict[str, Any], peers: list[str]) -> list[str]:
    """Documents, the `peers` lines and harvest: the part of a status a stopped node shares with a running
    one."""
    documents = status["documents"]
    lines = [f"documents  {documents['local']} local, {documents['pooled']} pooled", *peers]
    return lines + harvest_lines(status["harvest"], set(status.get("unfetched_topics") or ()))


def harvest_lines(harvest: dict[str, float], unfetched: set[str]) -> list[str]:
    """Each topic's harvest; past `LISTED_TOPICS` topics, how many were crawled and the lowest harvests
    (a status of hundreds of topics would fill screens), and where every topic's is."""
    if not harvest:
        return []
    lines = [f"harvest    {HARVEST_MEANS}"]
    if len(harvest) <= LISTED_TOPICS:
        return lines + _rate_lines(sorted(harvest.items()), unfetched)
    crawled = {topic: rate for topic, rate in harvest.items() if topic not in unfetched}
    summary = f"{len(harvest)} topics: {len(crawled)} crawled"
    if crawled:
        summary += f" (median {statistics.median(crawled.values()):.2f})"
    if unfetched:
        summary += f", {len(unfetched)} not crawled yet"
    lines.append(f"           {summary}")
    lowest = sorted(crawled.items(), key=lambda item: (item[1], item[0]))[:LOWEST_TOPICS]
    if lowest:
        lines.append("           lowest (every topic's in `topicswarm topics list`):")
        lines += _rate_lines(lowest, unfetched)
    else:
        lines.append("           every topic's in `topicswarm topics list`")
    return lines


def _rate_lines(rates: list[tuple[str, float]], unfetched: set[str]) -> list[str]:
    width = min(max(len(topic) for topic, _ in rates), TOPIC_WIDTH)
    shown = [
        (clipped(topic, width), "not crawled yet" if topic in unfetched else f"{rate:.2f}")
        for topic, rate in rates
    ]
    return [f"           {topic:<{width}} {figure}" for topic, figure in shown]


def _known_peer_lines(status: dict[str, Any]) -> list[str]:
    known, blocked = status["known_peers"], status["blocked_peers"]
    if not known and not blocked:
        return []
    rejoins = f"{known} known from its last run (it rejoins them)"
    if blocked is None:
        return [f"peers      {rejoins}; blocked.json is unreadable (`node run` says why)"]
    return [f"peers      {rejoins}" + (f", {blocked} blocked" if blocked else "")]


def peer_lines(status: dict[str, Any]) -> list[str]:
    """Peers online and traffic; for a networked node, the addresses others join it through, and when it
    has no peer, how to get one (nobody finds a node whose address they were not given)."""
    exchanged = status["bytes_exchanged"]
    traffic = f"exchanged {exchanged['in']} B in, {exchanged['out']} B out"
    lines = [f"peers      {status['peers_online']} online; {traffic}"]
    unshared = status.get("topics_not_shared") or []
    if unshared:
        named = ", ".join(map(repr, unshared[:3])) + (" ..." if len(unshared) > 3 else "")
        lines.append(
            f"           {counted(len(unshared), 'topic')} not shared with peers, the keys too long for the "
            f"wire (`topicswarm topics rename KEY NEW_KEY` shortens one): {named}"
        )
    if not status["peer_id"]:
        return lines
    if not status["peers_online"]:
        lines.append(
            "           none yet: join one with `topicswarm node run --bootstrap MULTIADDR`, or give "
            "peers an address below to join this node"
        )
    elif status.get("peers_sharing_topics") == 0:  # peers meet on a topic only when their keys are equal
        lines.append(
            "           none shares a topic with this node: `topicswarm peers` lists the communities "
            "they are in, and how to join one under its key"
        )
    lines += [f"{'addrs' if i == 0 else '':<11}{addr}" for i, addr in enumerate(status.get("addrs") or [])]
    return lines


def _seconds(seconds: float) -> str:
    """A crawl's duration as a person reads it: a small fixture crawl can take under a tenth of a second."""
    if seconds >= 10:
        return f"{seconds:.0f} s"
    return f"{seconds:.1f} s" if seconds >= 0.1 else "under 0.1 s"


def crawl_lines(crawl: dict[str, Any]) -> list[str]:
    """What the crawl does, why it does not crawl (and what to do), and how fast it went."""
    activity = crawl.get("activity") or ("crawling" if crawl.get("active") else crawl["state"])
    # the documents line below counts the repository; this count, the crawl's last snapshot, lagged it
    size = f"frontier {crawl['frontier_size']}"
    session = crawl.get("session") or {}
    if session.get("pages"):
        since = (
            f"since the node started {session['pages']} pages in {_seconds(session['crawl_seconds'])} of "
            f"crawling ({session['pages_per_s']:.1f} pages/s)"
        )
    else:
        since = "nothing crawled since the node started"
    if activity == "pausing":  # a pause lets the requests in flight finish
        lines = [
            f"crawl      pausing: {finishing_first(crawl.get('in_flight', 0))}",
            f"           {size}; {since}",
        ]
    elif crawl.get("active"):
        in_flight = f", {crawl['in_flight']} in flight" if crawl.get("in_flight") else ""
        lines = [
            f"crawl      {activity}  {crawl['pages_per_s']:.1f} pages/s (last seconds)  {size}{in_flight}",
            f"           {since}",
        ]
    else:
        lines = [
            f"crawl      {activity}: {crawl.get('detail') or crawl.get('reason') or 'waiting'}",
            f"           {size}; {since}",
        ]
    lines += waiting_hosts_lines(crawl.get("hosts_waiting"))
    if crawl.get("state") == "running":
        lines += held_topics_lines(crawl.get("held_topics"), crawl.get("held_links", 0))
    revisits = crawl.get("revisits") or {}
    if revisits.get("fetched"):
        lines.append(f"           {revisit_line(revisits['fetched'], revisits['changed'], revisits['gone'])}")
    for noun in ("sitemap", "feed"):
        listed = crawl.get(f"{noun}s") or {}
        if listed.get("read") or listed.get("unchanged"):
            line = listing_line(noun, listed["read"], listed["urls_queued"], listed.get("unchanged", 0))
            lines.append(f"           {line}")
    if not crawl.get("active") and revisits.get("next_in_s") is not None:
        wait = readable(revisits["next_in_s"])
        lines.append(f"           next stored page, sitemap or feed due again in {wait}")
    return lines
