"""`topicswarm meta build|show|loss`: the topics' restrictive meta-classifiers, built with peers' models."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from node.cli.common import CliError, add_client_args, connect, print_json
from node.client import NodeClient, NodeError
from node.wording import alone_text, peers_wanted


def register(sub: argparse._SubParsersAction) -> None:
    meta = sub.add_parser("meta", help="build and tune the topics' restrictive meta-classifiers with peers")
    meta_commands = meta.add_subparsers(dest="meta_command", metavar="COMMAND", required=True)
    build = meta_commands.add_parser(
        "build", help="build the meta-classifier of every topic (or of --topic) from peers' models"
    )
    add_client_args(build)
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
    add_client_args(show)
    show.add_argument("--topic", required=True, help="the topic key, e.g. Databases")
    show.set_defaults(func=run_meta_show)
    loss = meta_commands.add_parser(
        "loss", help="filter the repository at another loss (the meta-classifier is built again for it)"
    )
    add_client_args(loss)
    loss.add_argument("--topic", default=None, help="the topic key (default: every topic)")
    loss.add_argument(
        "--loss",
        type=loss_fraction,
        required=True,
        help="share of documents it may abstain on, at least 0 and below 1",
    )
    loss.set_defaults(func=run_meta_loss)


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
    wanted = peers_wanted(answer)
    loss = float(meta.get("loss") or 0.0)
    members = f"its own model and {used} peer model{'s' * (used != 1)}" if used else alone_text(answer)
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


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)
