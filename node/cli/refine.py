"""`topicswarm refine`: subtopics proposed by clustering a topic with peers; accepting or rejecting one."""

from __future__ import annotations

import argparse

from node.cli.common import CliError, add_client_args, connect, print_json
from node.cooperation.settings import MAX_CLUSTERS

REFINE_TITLES = 3  # sample titles `refine` prints under each proposal (--json has them all)


def register(sub: argparse._SubParsersAction) -> None:
    refine = sub.add_parser(
        "refine",
        help="cluster a topic with peers and list subtopic proposals; accept or reject one",
        description="`refine TOPIC --k K` proposes subtopics; `refine --accept ID [--name NAME]` makes "
        "proposal ID a subtopic (its documents move there), `refine --reject ID` dismisses it.",
    )
    add_client_args(refine)
    refine.add_argument("topic", nargs="?", help="the topic key to refine")
    refine.add_argument(
        "--k", type=int, default=None, help="number of clusters (default: [cooperation] cluster_k, 3)"
    )
    decision = refine.add_mutually_exclusive_group()
    decision.add_argument("--accept", type=int, metavar="ID", help="make proposal ID a subtopic")
    decision.add_argument("--reject", type=int, metavar="ID", help="dismiss proposal ID")
    refine.add_argument(
        "--name",
        help="with --accept: the subtopic's name (default: the proposal's label, its top terms joined by -)",
    )
    refine.set_defaults(func=run_refine)


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
        if answer.get("learns"):
            print(f"  {answer['learns']}")
        if args.name is None:
            print("  named after the cluster's top terms (--name NAME gives a subtopic a name of your own)")
    else:
        print(f"proposal {answer['id']} {answer.get('status')}")
    return 0
