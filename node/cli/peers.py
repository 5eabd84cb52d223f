"""`topicswarm peers`: the running node's neighbours, and blocking or unblocking one."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from node.cli.common import add_client_args, connect, data_dir, print_json
from node.wording import counted, listed, rename_command


def register(sub: argparse._SubParsersAction) -> None:
    peers = sub.add_parser(
        "peers",
        help="the running node's neighbours and what they sent; block or unblock one",
        description="Lists the neighbours and the peers you blocked. `peers --block PEER` shuts a peer out "
        "(PEER: its id, or the start of one the node knows): the node refuses it from now on, also after "
        "a restart, removes the models and results it sent and builds the meta-classifiers it had a say in "
        "again; `peers --unblock PEER` lets it in again.",
    )
    add_client_args(peers)
    choice = peers.add_mutually_exclusive_group()
    choice.add_argument("--block", metavar="PEER", help="refuse this peer and remove what it sent")
    choice.add_argument("--unblock", metavar="PEER", help="let a blocked peer in again")
    peers.set_defaults(func=run_peers)


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
        topics = listed(peer.get("shared_topics") or []) or "-"
        rejected = ", ".join(f"{r['reason']} x{r['count']}" for r in peer.get("rejected") or []) or "none"
        print(
            f"{peer['peer_id']}\n  topics {topics}\n  bytes in {peer.get('bytes_in', 0)} out "
            f"{peer.get('bytes_out', 0)}\n  rejected {rejected}"
        )
    for line in nearby_lines(peers.get("nearby") or [], data_dir(args).root):
        print(line)
    return 0


def nearby_lines(nearby: list[dict[str, Any]], data: Path) -> list[str]:
    """The communities neighbours are in and this node is not, and how to join one under another name."""
    if not nearby:
        return []
    lines = [
        "communities your neighbours are in and this node is not (peers share a topic whose keys are equal):"
    ]
    for row in nearby:
        alike = f"  like your {' or '.join(row['alike'])}" if row["alike"] else ""
        lines.append(f"  {row['key']}  {counted(row['peers'], 'peer')}{alike}")
    example = next((row for row in nearby if row["alike"]), None)
    if example is not None:
        rename = rename_command(example["alike"][0], example["key"], data)
        lines.append(f"  join one under its key: stop the node, `{rename}`, run it again")
    return lines


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
        rebuilt = listed(answer["meta_rebuilt"])
        print(
            f"blocked {answer['peer_id']}: refused from now on; {answer['models_forgotten']} models and "
            f"{answer['results_removed']} results it sent removed ({answer['results_kept']} that other peers "
            f"sent too kept)" + (f"; meta-classifiers built again without it: {rebuilt}" if rebuilt else "")
        )
    else:
        print(f"unblocked {answer['peer_id']}: its models and results come again as it offers them")
    return 0
