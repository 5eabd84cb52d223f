"""Commands of a running node: `init`, `node run`, `status`, `peers`, `meta build|show|loss`, `refine`.

Every command but `init` and `node run` talks to the node of `--data` through its control API
(`node.client.NodeClient`); `--json` prints the API's answer as one JSON object for scripts.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from logging.handlers import RotatingFileHandler
from typing import Any

from node.cli.common import (
    CliError,
    add_data_arg,
    count,
    data_dir,
    data_dir_for_writing,
    http_url,
    listing_line,
    open_repository,
    revisit_line,
)
from node.client import (
    ClientError,
    NodeClient,
    NodeError,
    NodeStopping,
    NodeUnreachable,
    node_address,
    node_running,
)
from node.config import ConfigError, default_config_toml, load_config
from node.cooperation.settings import MAX_CLUSTERS
from node.datadir import DataDir, write_atomically
from node.wording import counted, crawl_answer_text, finishing_first, readable

STOP_WAIT_SECONDS = 60.0  # `node stop`: the node's shutdown grace (10 s by default) and saving, with room
STOP_POLL_SECONDS = 0.2
REFINE_TITLES = 3  # sample titles `refine` prints under each proposal (--json has them all)
NOT_RUNNING = 3  # `status` when no node runs (an init script's status code); it shows what is stored


def register(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser("init", help="create a node's data directory: config.toml, identity, API token")
    add_data_arg(init)
    init.set_defaults(func=run_init)

    node = sub.add_parser("node", help="run a node (crawler, peers, control API), or stop a running one")
    commands = node.add_subparsers(dest="node_command", metavar="COMMAND", required=True)
    runner = commands.add_parser("run", help="run the node until Ctrl-C or SIGTERM (it resumes where it was)")
    add_data_arg(runner)
    runner.add_argument(
        "--bootstrap",
        action="append",
        default=[],
        metavar="MULTIADDR",
        help="join a network through this live peer address (repeatable; a restarted node rejoins the peers "
        "it knew without it)",
    )
    runner.add_argument(
        "--listen",
        action="append",
        default=[],
        metavar="MULTIADDR",
        help="listen for peers on this address, e.g. /ip4/0.0.0.0/tcp/4001 (repeatable)",
    )
    runner.add_argument("--offline", action="store_true", help="crawl alone: no peer-to-peer network")
    runner.add_argument(
        "--seed",
        action="append",
        default=[],
        type=http_url,
        metavar="URL",
        help="also crawl from this URL (repeatable)",
    )
    runner.add_argument(
        "--max-pages", type=count, default=None, metavar="N", help="stop crawling at N documents"
    )
    runner.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="detail of DATA/node.log (the terminal shows warnings and errors; default INFO)",
    )
    runner.set_defaults(func=run_node)
    stopper = commands.add_parser(
        "stop", help="stop the running node as Ctrl-C would (also one that `topicswarm tui` started)"
    )
    add_data_arg(stopper)
    stopper.add_argument(
        "--wait",
        type=float,
        default=STOP_WAIT_SECONDS,
        metavar="SECONDS",
        help=f"how long to wait for it to save its state and exit (default {STOP_WAIT_SECONDS:.0f})",
    )
    stopper.set_defaults(func=run_stop)

    status = sub.add_parser(
        "status",
        help="what the running node is doing; when none runs, what it stored (exit code 3)",
        description="What the running node is doing. When no node runs for --data: what it stored (pages, "
        "links queued, harvest, its last run's errors, the peers it rejoins) and the state its crawl resumes "
        "in, with exit code 3.",
    )
    _client_args(status)
    status.set_defaults(func=run_status)

    peers = sub.add_parser(
        "peers",
        help="the running node's neighbours and what they sent; block or unblock one",
        description="Lists the neighbours and the peers you blocked. `peers --block PEER` shuts a peer out "
        "(PEER: its id, or the start of one the node knows): the node refuses it from now on, also after "
        "a restart, removes the models and results it sent and builds the meta-classifiers it had a say in "
        "again; `peers --unblock PEER` lets it in again.",
    )
    _client_args(peers)
    choice = peers.add_mutually_exclusive_group()
    choice.add_argument("--block", metavar="PEER", help="refuse this peer and remove what it sent")
    choice.add_argument("--unblock", metavar="PEER", help="let a blocked peer in again")
    peers.set_defaults(func=run_peers)

    meta = sub.add_parser("meta", help="build and tune the topics' restrictive meta-classifiers with peers")
    meta_commands = meta.add_subparsers(dest="meta_command", metavar="COMMAND", required=True)
    build = meta_commands.add_parser(
        "build", help="build the meta-classifier of every topic (or of --topic) from peers' models"
    )
    _client_args(build)
    build.add_argument("--topic", default=None, help="the topic key, e.g. Databases (default: every topic)")
    build.add_argument(
        "--loss",
        type=loss_fraction,
        default=None,
        help="share of documents it may abstain on, at least 0 and below 1 (default: the topic's loss as "
        "last set, else cooperation.default_loss)",
    )
    build.add_argument(
        "--error-goal", type=error_fraction, default=None, help="wanted error rate (peer-count estimate)"
    )
    build.set_defaults(func=run_meta_build)
    show = meta_commands.add_parser("show", help="the topic's meta-classifier and its loss/accuracy curve")
    _client_args(show)
    show.add_argument("--topic", required=True, help="the topic key, e.g. Databases")
    show.set_defaults(func=run_meta_show)
    loss = meta_commands.add_parser(
        "loss", help="filter the repository at another loss (the meta-classifier is built again for it)"
    )
    _client_args(loss)
    loss.add_argument("--topic", default=None, help="the topic key (default: every topic)")
    loss.add_argument(
        "--loss",
        type=loss_fraction,
        required=True,
        help="share of documents it may abstain on, at least 0 and below 1",
    )
    loss.set_defaults(func=run_meta_loss)

    refine = sub.add_parser(
        "refine",
        help="cluster a topic with peers and list subtopic proposals; accept or reject one",
        description="`refine TOPIC --k K` proposes subtopics; `refine --accept ID [--name NAME]` makes "
        "proposal ID a subtopic (its documents move there), `refine --reject ID` dismisses it.",
    )
    _client_args(refine)
    refine.add_argument("topic", nargs="?", help="the topic key to refine")
    refine.add_argument(
        "--k", type=int, default=None, help="number of clusters (default: [cooperation] cluster_k, 3)"
    )
    decision = refine.add_mutually_exclusive_group()
    decision.add_argument("--accept", type=int, metavar="ID", help="make proposal ID a subtopic")
    decision.add_argument("--reject", type=int, metavar="ID", help="dismiss proposal ID")
    refine.add_argument("--name", help="with --accept: the subtopic's name (default: the proposal's label)")
    refine.set_defaults(func=run_refine)


def _client_args(parser: argparse.ArgumentParser) -> None:
    add_data_arg(parser)
    parser.add_argument("--json", action="store_true", help="print the node's answer as JSON")


@contextmanager
def api_errors() -> Iterator[None]:
    """Client errors inside become one-line CLI errors."""
    try:
        yield
    except NodeError as exc:
        raise CliError(f"the node refused: {exc.detail}") from exc
    except ClientError as exc:
        raise CliError(str(exc)) from exc


@contextmanager
def connect(args: argparse.Namespace) -> Iterator[NodeClient]:
    """A client of the node of `--data`; client errors become one-line CLI errors."""
    with api_errors(), NodeClient.from_data_dir(data_dir(args)) as client:
        yield client


def print_json(answer: Any) -> None:
    print(json.dumps(answer, ensure_ascii=False, indent=None))


# -- init and run ---------------------------------------------------------------------------------------
def run_init(args: argparse.Namespace) -> int:
    data = data_dir(args).ensure()
    created = []
    if not data.config.exists():
        write_atomically(data.config, default_config_toml())
        created.append("config.toml")
    if not data.identity.exists():
        from p2p.identity import load_or_create_identity, peer_id_of

        peer = peer_id_of(load_or_create_identity(data.identity))
        created.append(f"identity (peer id {peer})")
    if not data.api_token.exists():
        data.read_or_create_token()
        created.append("api.token")
    print(f"data directory {data.root}: " + (", ".join(f"created {c}" for c in created) or "already set up"))
    print(
        f"next: topicswarm topics import --data {data.root} bookmarks.html; "
        f"topicswarm node run --data {data.root}"
    )
    return 0


LOG_BYTES = 10 * 1024 * 1024  # node.log is rotated at this size, keeping LOG_BACKUPS older files
LOG_BACKUPS = 3


def setup_logging(data: DataDir, level: str) -> None:
    """node.log, rotated: a node running for weeks, or a peer making it log on purpose, must not fill
    the disk with it."""
    handlers: list[logging.Handler] = [
        RotatingFileHandler(data.log, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
    ]
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING if level == "INFO" else level)
    handlers.append(console)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers, force=True
    )
    for noisy in ("hypercorn.error", "hypercorn.access", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def run_node(args: argparse.Namespace) -> int:
    import trio

    from node.service import NodeService

    check_run_args(args)  # before anything is made
    data = data_dir_for_writing(args)
    if node_running(data):
        raise CliError(
            f"a node already runs for {data.root}: stop it first (`topicswarm node stop --data "
            f"{data.root}`), or use another --data directory"
        )
    try:
        config = load_config(data.config)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    setup_logging(data, args.log_level)
    service = NodeService(
        data,
        config,
        bootstrap=args.bootstrap,
        listen=args.listen,
        offline=True if args.offline else None,
        max_pages=args.max_pages,
        handle_signals=True,
    )

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(service.run)
            if args.seed:
                await service.add_seeds(args.seed)
            print(ready_line(service), flush=True)

    try:
        trio.run(main)
    except Exception as exc:
        refusal = service_error_in(exc)
        if refusal is not None:  # the node refused to start and said why (a port in use, a bad repository)
            raise CliError(refusal.detail) from exc
        from crawler.repository import damaged, is_damaged
        from node.service import innermost, root_cause

        logging.getLogger("node").exception("the node failed")
        if is_damaged(cause := innermost(exc)):  # a failing disk: say so, and the way back
            stopped = damaged(data.repository, f"SQLite said: {cause}", node_stopped=True)
            raise CliError(f"the node stopped: {stopped}") from exc
        raise CliError(f"the node failed: {root_cause(exc)} (details in {data.log})") from exc
    print("node stopped: frontier and state saved", file=sys.stderr)
    return 0


def run_stop(args: argparse.Namespace) -> int:
    """Ask the node to stop, then wait until it has: its api.json goes last, after the frontier and the
    repository are saved and closed."""
    data = data_dir(args)
    with connect(args) as client:
        pid = client.stop_node()["pid"]
    deadline = time.monotonic() + max(args.wait, 0.0)
    while node_running(data):
        if time.monotonic() >= deadline:
            raise CliError(
                f"the node (pid {pid}) is still stopping after {args.wait:g} s, letting in-flight pages "
                f"finish (node.shutdown_grace) and saving: wait, or `kill -9 {pid}` (nothing stored is "
                "lost; pages in flight are fetched again)"
            )
        time.sleep(STOP_POLL_SECONDS)
    resumes = f"`topicswarm node run --data {data.root}` resumes"
    print(f"node stopped (pid {pid}): frontier and state saved; {resumes}")
    return 0


def loss_fraction(text: str) -> float:
    """--loss: a share of documents to abstain on, checked once here rather than refused once per topic."""
    return _fraction(text, "a loss is at least 0 and below 1 (the share of documents to abstain on)", 0.0)


def error_fraction(text: str) -> float:
    return _fraction(text, "an error goal lies between 0 and 1, both left out (e.g. 0.05)", None)


def _fraction(text: str, rule: str, lowest: float | None) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number: {rule}") from None
    if not (value == lowest or 0.0 < value < 1.0):
        raise argparse.ArgumentTypeError(f"{text}: {rule}")
    return value


def check_run_args(args: argparse.Namespace) -> None:
    """`node run`'s options that cannot work, refused in one line each."""
    from p2p.addresses import check_listen_addr, check_peer_addr

    if args.max_pages is not None and args.max_pages < 0:
        raise CliError("--max-pages must be 0 or more")
    if args.offline and (args.listen or args.bootstrap):  # they were silently ignored
        raise CliError(
            "--offline runs without peers, so --listen and --bootstrap do nothing: drop --offline to join "
            "a network, or drop them to crawl alone"
        )
    try:
        for addr in args.listen:
            check_listen_addr(addr)
        for addr in args.bootstrap:
            check_peer_addr(addr)
    except ValueError as exc:
        raise CliError(str(exc)) from None


def service_error_in(exc: BaseException) -> Any:
    """The NodeServiceError inside `exc` or its exception groups (trio wraps a failing start in them)."""
    from node.errors import NodeServiceError

    if isinstance(exc, NodeServiceError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = service_error_in(inner)
            if found is not None:
                return found
    return None


def ready_line(service: Any) -> str:
    """The API, the peer id and the addresses other nodes join through (`--bootstrap`: a node listening on
    every interface gives the machine's addresses, `p2p.addresses`)."""
    shown = " ".join(service.addrs()) or "(offline)"
    return f"node ready: api {service.api_url} peer {service.peer_id or '-'} addrs {shown}"


# -- status and peers -----------------------------------------------------------------------------------
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
    if crawl["resumes"] == RUNNING:
        resumes = "the crawl resumes when the node starts"
    else:
        state = crawl["resumes"]
        resumes = f"the crawl stays {state} when the node starts (`topicswarm crawl start` resumes it)"
    lines = [f"node       {why}", f"crawl      {crawl['frontier_size']} links queued; {resumes}"]
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
    if status["harvest"]:
        lines.append("harvest    share of the pages fetched for each topic that its classifier accepted")
    lines += [f"           {topic:<30} {rate:.2f}" for topic, rate in sorted(status["harvest"].items())]
    return lines


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
    if not status["peer_id"]:
        return lines
    if not status["peers_online"]:
        lines.append(
            "           none yet: join one with `topicswarm node run --bootstrap MULTIADDR`, or give "
            "peers an address below to join this node"
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
    held = crawl.get("held_topics") or {}
    if held and crawl.get("state") == "running":
        topics = ", ".join(f"{topic} ({state})" for topic, state in held.items())
        lines.append(f"           not crawled: {topics}; `topicswarm crawl start --topic T` resumes one")
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


def run_peers(args: argparse.Namespace) -> int:
    if args.block or args.unblock:
        return run_peer_block(args)
    with connect(args) as client:
        peers = client.peers()
        networked = args.json or peers["peers"] or client.status().get("networked", True)
    if args.json:
        print_json(peers)
        return 0
    for line in blocked_lines(peers.get("blocked") or []):
        print(line)
    if not networked:
        print(
            "no peers: this node runs offline; restart it without --offline, with --bootstrap MULTIADDR "
            "to join a network"
        )
        return 0
    if not peers["peers"]:
        print("no peers: join a network with `topicswarm node run --bootstrap MULTIADDR`")
        return 0
    for peer in peers["peers"]:
        topics = ", ".join(peer.get("shared_topics") or []) or "-"
        rejected = ", ".join(f"{r['reason']} x{r['count']}" for r in peer.get("rejected") or []) or "none"
        print(
            f"{peer['peer_id']}\n  topics {topics}\n  bytes in {peer.get('bytes_in', 0)} out "
            f"{peer.get('bytes_out', 0)}\n  rejected {rejected}"
        )
    return 0


def blocked_lines(blocked: list[dict[str, Any]]) -> list[str]:
    """The peers the user blocked, newest first, with how to let one in again."""
    if not blocked:
        return []
    rows = sorted(blocked, key=lambda row: row["blocked_at"], reverse=True)
    lines = [
        f"blocked    {len(rows)} peer{'s' if len(rows) != 1 else ''} (`topicswarm peers --unblock PEER`)"
    ]
    stamp = "%Y-%m-%d %H:%M"
    lines += [
        f"  {row['peer_id']}  since {time.strftime(stamp, time.localtime(row['blocked_at']))}" for row in rows
    ]
    return lines


def run_peer_block(args: argparse.Namespace) -> int:
    with connect(args) as client:
        answer = client.block_peer(args.block) if args.block else client.unblock_peer(args.unblock)
    if args.json:
        print_json(answer)
    elif answer["blocked"]:
        rebuilt = ", ".join(answer["meta_rebuilt"])
        print(
            f"blocked {answer['peer_id']}: refused from now on; {answer['models_forgotten']} models and "
            f"{answer['results_removed']} results it sent removed ({answer['results_kept']} that other peers "
            f"sent too kept)" + (f"; meta-classifiers built again without it: {rebuilt}" if rebuilt else "")
        )
    else:
        print(f"unblocked {answer['peer_id']}: its models and results come again as it offers them")
    return 0


# -- cooperation ----------------------------------------------------------------------------------------
def run_meta_build(args: argparse.Namespace) -> int:
    with connect(args) as client:
        built, failed = each_topic(
            client, args.topic, lambda topic: client.build_meta(topic, args.loss, args.error_goal)
        )
        metas = {topic: client.meta(topic) for topic in built} if not args.json else {}
    if args.json:
        print_json(built[args.topic] if args.topic else {"topics": built, "failed": failed})
    else:
        for topic, answer in built.items():
            print(build_text(answer, metas[topic]))
        print_failures("meta-classifier", failed)
    return 1 if failed else 0


def each_topic(
    client: NodeClient, topic: str | None, call: Callable[[str], Any]
) -> tuple[dict[str, Any], dict[str, str]]:
    """`call` on the topic asked for, or on each of the node's topics in turn: the answers by topic and,
    when every topic was asked for, the ones the node refused with its reason (one topic's lack of models
    does not stop the others). A node that cannot cooperate at all (503) fails the command."""
    if topic is not None:
        return {topic: call(topic)}, {}
    keys = [t["key"] for t in client.topics()["topics"]]
    if not keys:
        raise CliError("the node has no topics yet: import some with `topicswarm topics import FILE`")
    answers: dict[str, Any] = {}
    failed: dict[str, str] = {}
    for key in keys:
        try:
            answers[key] = call(key)
        except NodeError as exc:
            if exc.status == 503:
                raise
            failed[key] = exc.detail
    return answers, failed


def print_failures(what: str, failed: dict[str, str]) -> None:
    for topic, detail in failed.items():
        print(f"{what} for {topic}: not done: {detail}", file=sys.stderr)


def build_text(answer: dict[str, Any], meta: dict[str, Any]) -> str:
    """What a build made, its filtering, and its accuracy on documents its local model did not train on
    (the build's own `measured` figure is on its training documents, which flatter it)."""
    used = int(answer.get("peers_used") or 0)
    # peers_needed counts the models the estimate wants, this node's own among them
    wanted = int(answer["peers_needed"]) - 1 if answer.get("peers_needed") is not None else None
    loss = float(meta.get("loss") or 0.0)
    members = (
        f"its own model and {used} peer model{'s' * (used != 1)}"
        if used
        else "its own model alone (no peer model of this topic could be used yet)"
    )
    lines = [
        f"meta-classifier for {answer['topic']}: {members}"
        + (
            f" (the estimate asks for {wanted} peer model{'s' * (wanted != 1)})"
            if wanted is not None and wanted > used
            else ""
        ),
        f"  filtering at loss {loss:.2f}: {verdicts_text(answer)}",
        f"  accuracy at loss {loss:.2f}: {held_out_text(meta, loss)}",
    ]
    predicted = answer.get("predicted") or {}
    # with no peer model used there are no peers' reports behind the estimate (it printed 0.500 at loss 0)
    if used and predicted.get("accuracy") is not None and predicted.get("loss") is not None:
        lines.append(
            f"  estimate from peers' reports, for unanimous decisions of {used + 1} models: accuracy "
            f"{_fmt(predicted['accuracy'])}, abstaining on {_fmt(predicted['loss'])} of the documents"
        )
    elif used and predicted.get("why"):
        lines.append(f"  no estimate from peers' reports: {predicted['why']}")
    return "\n".join(lines)


def held_out_text(meta: dict[str, Any], loss: float) -> str:
    """The held-out accuracy at `loss` with what it was measured on, and the training-document figure."""
    from node.heldout import accuracy_at

    held = meta.get("held_out") or {}
    trained = accuracy_at(meta.get("curve") or [], loss)
    on_training = f"on its training documents {_fmt(trained)} (optimistic)"
    accuracy = accuracy_at(held.get("curve") or [], loss)
    if accuracy is None:
        why = held.get("why") or "not measured"
        return f"held-out n/a ({why}); {on_training}"
    return (
        f"{_fmt(accuracy)} held-out ({held.get('folds')}-fold cross-validation on {held.get('documents')} "
        f"labelled documents); {on_training}"
    )


def verdicts_text(answer: dict[str, Any]) -> str:
    """A filtering's verdicts in words: "52 documents kept, 28 rejected, 20 abstained" (a node older than
    the rejected count says kept and abstained only)."""
    rest = [f"{answer[key]} {key}" for key in ("rejected", "abstained") if answer.get(key) is not None]
    return ", ".join([f"{answer.get('kept')} documents kept", *rest])


def run_meta_show(args: argparse.Namespace) -> int:
    with connect(args) as client:
        answer = client.meta(args.topic)
    if args.json:
        print_json(answer)
        return 0
    print(
        f"{answer['topic']}: loss {_fmt(answer.get('loss'))}, {verdicts_text(answer)}"
        + (f", {answer['unjudged']} not judged yet" if answer.get("unjudged") else "")
    )
    held = answer.get("held_out") or {}
    held_by_loss = {p["loss"]: p.get("accuracy") for p in held.get("curve") or []}
    if held_by_loss:
        print(
            f"  accuracy by loss: held-out = {held.get('folds')}-fold cross-validation on "
            f"{held.get('documents')} labelled documents; training = on the documents the local model "
            "trained on (optimistic)"
        )
    else:
        why = held.get("why") or "not measured"
        print(f"  no held-out accuracy ({why}); the training figures are optimistic")
    print("  loss   held-out  training")
    for point in answer.get("curve") or []:
        print(
            f"  {_fmt(point['loss']):<6} {_fmt(held_by_loss.get(point['loss'])):<9} {_fmt(point['accuracy'])}"
        )
    print("\n".join(member_lines(answer.get("models") or [])))
    if answer.get("combination"):  # absent from nodes older than the latent class meta-classifier
        print(combination_line(answer["combination"]))
    if answer.get("rival_topics"):
        rivals = ", ".join(answer["rival_topics"])
        print(f"  filtered against the claims of the topics it competes with: {rivals}")
    return 0


def combination_line(combination: dict[str, Any]) -> str:
    """How the meta-classifier combines its models, each latent class model with its on-topic share."""
    voters = []
    for voter in combination.get("voters") or []:
        models = "own model" if voter["models"] == ["local"] else f"{len(voter['models'])} models"
        share = voter.get("on_topic_share")
        voters.append(
            f"{models} ({_fmt(share)} of the pages on topic)"
            if share is not None
            else f"{models} (its labels' threshold)"
        )
    rule = combination.get("rule") or "unknown"
    return f"  combined by: {rule}" + (f": {'; '.join(voters)}" if voters else "")


def member_lines(members: list[dict[str, Any]]) -> list[str]:
    """The models the meta-classifier combines with their weights in it (`peers` and GET /api/models give
    the label-measured weight, which is 0 for a peer model no labelled document here can test)."""
    lines = ["  models combined (weight in this meta-classifier; accuracy on labelled documents here)"]
    for m in sorted(members, key=lambda m: (m.get("origin") != "local", -(m.get("weight") or 0.0))):
        origin = str(m.get("origin") or "local")
        name = "own model" if origin == "local" else f"{origin[:10]}…{origin[-6:]}"
        evaluated = int(m.get("evaluated") or 0)
        accuracy = (
            f"{_fmt(m['accuracy_local'])} on {evaluated}"
            if m.get("accuracy_local") is not None and evaluated
            else "not measured (no labelled document here it did not train on)"
        )
        lines.append(f"    {name:<18} {_fmt(m.get('weight')):<6} {accuracy}")
    return lines if members else ["  models combined: none listed"]


def run_meta_loss(args: argparse.Namespace) -> int:
    with connect(args) as client:
        changed, failed = each_topic(client, args.topic, lambda topic: client.set_loss(topic, args.loss))
    if args.json:
        print_json(changed[args.topic] if args.topic else {"topics": changed, "failed": failed})
        return 1 if failed else 0
    for topic, answer in changed.items():
        prefix = "" if args.topic else f"{topic}: "
        print(f"{prefix}loss {_fmt(answer.get('loss'))}: {verdicts_text(answer)}")
        if answer.get("combination"):  # absent from nodes older than the rebuild at a new loss
            print(combination_line(answer["combination"]))
    print_failures("loss", failed)
    return 1 if failed else 0


def run_refine(args: argparse.Namespace) -> int:
    if args.name is not None and args.accept is None:
        raise CliError("--name goes with --accept ID")
    if args.accept is not None or args.reject is not None:
        return decide_proposal(args)
    if args.topic is None:
        raise CliError("name the topic: `topicswarm refine TOPIC --k K`; or give --accept ID or --reject ID")
    if args.k is not None and not 2 <= args.k <= MAX_CLUSTERS:
        raise CliError(f"--k must be between 2 and {MAX_CLUSTERS}")
    with connect(args) as client:
        answer = client.refine(args.topic, args.k)
    if args.json:
        print_json(answer)
        return 0
    for p in answer["proposals"]:
        terms = ", ".join(p.get("top_terms") or [])
        print(
            f"[{p['id']}] {p.get('label')}  ({p.get('size')} documents, "
            f"{p.get('abstained')} abstained)  {terms}"
        )
        for title in (p.get("sample_titles") or [])[:REFINE_TITLES]:
            print(f"      {title}")
    if not answer["proposals"]:
        print("no proposals: the topic has too few documents yet")
    else:
        print("accept one with `topicswarm refine --accept ID [--name NAME]`, or --reject ID")
    return 0


def decide_proposal(args: argparse.Namespace) -> int:
    """`refine --accept ID [--name NAME]` or `refine --reject ID`: the proposal's new state."""
    if args.topic is not None:
        raise CliError("--accept and --reject take a proposal ID, not a topic: drop the topic")
    with connect(args) as client:
        if args.accept is not None:
            answer = client.accept_proposal(args.accept, args.name)
        else:
            answer = client.reject_proposal(args.reject)
    if args.json:
        print_json(answer)
    elif answer.get("status") == "accepted":
        print(f"proposal {answer['id']} accepted: subtopic {answer['topic']}/{answer['label']}")
        if args.name is None:
            print("  named after the cluster's top terms (--name NAME gives a subtopic a name of your own)")
    else:
        print(f"proposal {answer['id']} {answer.get('status')}")
    return 0


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def node_client_or_none(data: DataDir) -> NodeClient | None:
    """A client when a node runs for `data` (commands then go through the API), else None (direct access)."""
    if not node_running(data):
        return None
    try:
        return NodeClient.from_data_dir(data)
    except NodeUnreachable:
        return None


def control_crawl(args: argparse.Namespace) -> int:
    """`topicswarm crawl start|pause|stop [--topic T]` (registered by `node.cli.crawl`)."""
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
    lines = [f"{answer['due']} stored pages due for a revisit now; the crawl fetches them before new links"]
    lines += [
        f"not revisited: {url} (not stored by this node's crawl, off-topic or a duplicate)"
        for url in answer["not_revisited"]
    ]
    if answer.get("detail"):
        lines.append(answer["detail"])
    print("\n".join(lines))
    return 0
