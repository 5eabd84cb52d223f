"""`topicswarm node run|stop`: a node in the foreground until Ctrl-C, and stopping one from elsewhere."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from logging.handlers import RotatingFileHandler
from typing import Any

from node.cli.common import CliError, add_data_arg, connect, count, data_dir, data_dir_set_up, http_url
from node.client import node_running
from node.config import ConfigError, load_config
from node.datadir import DataDir

STOP_WAIT_SECONDS = 60.0  # `node stop`: the node's shutdown grace (10 s by default) and saving, with room
STOP_POLL_SECONDS = 0.2


def register(sub: argparse._SubParsersAction) -> None:
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
    data = data_dir_set_up(args)
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
        from crawler.repository_faults import damaged, is_damaged
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
