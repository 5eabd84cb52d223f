"""Durations, counts and answers as a person reads them: in the CLI, the UI and the node's idle reasons."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

LISTED_ITEMS = 8  # a list in a line of text names at most this many items


def readable(seconds: float) -> str:
    """A wait of seconds to weeks, in the largest unit that keeps it readable."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def counted(number: int, noun: str) -> str:
    """ "1 link", "2 links": a count with its noun (plural by an s)."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def held_topics_text(held: Mapping[str, str]) -> str:
    """ "Databases (paused), Sysadmin (stopped)": the topics the user held, with the state each was given."""
    return listed([f"{topic} ({state})" for topic, state in held.items()])


def listed(items: Sequence[str], most: int = LISTED_ITEMS) -> str:
    """ "A, B, C": the items; past `most`, the first of them and how many more, so a line about a node's
    topics stays a line when it has hundreds."""
    if len(items) <= most:
        return ", ".join(items)
    return ", ".join(items[: most - 1]) + f" and {len(items) - most + 1} more"


def start_held(held: Mapping[str, str]) -> str:
    """How to start a held topic: with the topic's own key when only one is held, so the user can run the
    command as it is."""
    if len(held) == 1:
        return f"start it with `topicswarm crawl start --topic {shlex.quote(next(iter(held)))}`"
    return "start one with `topicswarm crawl start --topic KEY`"


def alternatives(words: list[str]) -> str:
    """ "build, show or loss": the choices a person picks one of."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


# "harvest" is what a node measures, as its status, API and UI give it. The demo also knows the web's ground
# truth and calls that figure "relevant" (its summary called it harvest, beside the UI's harvest of the
# classifier: one word for two figures).
HARVEST_MEANS = "share of the pages fetched for each topic that its classifier accepted"
RELEVANT_MEANS = "share of the node's pages in one of its topics' groups, by the web's ground truth"


NOTHING_MATCHES = "no page or pooled result here matches it, whatever the filters"


def without_filters(results: int | None) -> str:
    """What a search whose filters left nothing finds without them (`None`: not asked, 0: nothing)."""
    return f"; {counted(results, 'result')} without them" if results else ""


def crawl_answer_text(answer: dict[str, Any], topic: str | None) -> str:
    """The state set, the requests in flight a pause lets finish or a stop cancelled, and why the crawl
    will not move when it will not (the whole crawl held while a topic was started, the page limit
    reached, nothing queued)."""
    text = f"crawl {answer['state']}" + (f" for {topic}" if topic else "")
    crawl = answer.get("crawl") or {}
    if topic and crawl.get("state") not in (None, "running"):
        return f"{text}; the whole crawl is {crawl['state']}: `topicswarm crawl start` resumes it"
    if answer["state"] == "running" and crawl.get("reason") not in (None, "", "starting"):
        return f"{text}, but it will not fetch: {crawl.get('detail') or crawl['reason']}"
    if cancelled := answer.get("in_flight_cancelled"):
        links = "its link" if cancelled == 1 else "their links"
        requests = counted(cancelled, "request")
        return f"{text}: {requests} in flight cancelled, {links} queued for `topicswarm crawl start`"
    if finishing := answer.get("in_flight_finishing"):
        return f"{text}: {finishing_first(finishing)}"
    return text


def finishing_first(in_flight: int) -> str:
    """What a pause waits for, and how not to."""
    verb, them = ("finishes", "it") if in_flight == 1 else ("finish", "them")
    return f"{counted(in_flight, 'request')} in flight {verb} first (`topicswarm crawl stop` cancels {them})"


def peers_wanted(answer: dict[str, Any]) -> int | None:
    """The peer models a build asked for besides its own (None: every peer, no count meeting the error
    goal); a node older than the answer's error_goal counted its own model in peers_needed."""
    needed = answer.get("peers_needed")
    if needed is None:
        return None
    return int(needed) - (0 if "error_goal" in answer else 1)


def alone_text(answer: dict[str, Any]) -> str:
    """Why a build combined no peer model: the estimate found the own model enough for the error goal, or
    no peer model could be used (it said the latter when the estimate had left the peers' models out)."""
    goal = answer.get("error_goal")
    if goal is not None and peers_wanted(answer) == 0:
        return (
            f"its own model alone (by the estimate from the models' measured accuracies it meets the error "
            f"goal {goal:g} by itself, so no peer model was combined)"
        )
    return "its own model alone (no peer model of this topic could be used yet)"


def rename_command(old: str, new: str, data: object) -> str:
    """The command that files topic `old` under the community key `new` (`topicswarm topics rename`)."""
    return " ".join(["topicswarm topics rename --data", *(shlex.quote(str(x)) for x in (data, old, new))])


def clipped(text: str, width: int) -> str:
    """`text` in at most `width` characters: a longer one loses its middle to an ellipsis, so a topic key
    keeps its top folder and its leaf."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return f"{text[:head]}\u2026{text[len(text) - (width - 1 - head) :]}"
