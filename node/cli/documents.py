"""`topicswarm show` and `topicswarm feedback`: one stored page from a search hit, and a mark on it.

Both go through the node's API when a node runs on the data directory (its repository has one writer, and
a mark on a peer's result has the node fetch the page to train on), else straight to the repository.
"""

from __future__ import annotations

import argparse
import textwrap
import time
from typing import TYPE_CHECKING, Any

from crawler.charsets import without_controls
from crawler.query import DEFAULT_USER
from node.cli.common import (
    CliError,
    add_data_arg,
    api_errors,
    data_dir,
    node_client_or_none,
    open_repository,
    print_json,
)
from node.datadir import DataDir

if TYPE_CHECKING:
    from node.client import NodeClient

PREVIEW_WIDTH = 100
NOT_JUDGED = "not filtered yet (no meta-classifier has judged it)"


def register(sub: argparse._SubParsersAction) -> None:
    show = sub.add_parser(
        "show",
        help="one stored page: how it was fetched and judged, its feedback and the start of its text",
        description="The stored page behind a search hit (DOC is the `doc` number `topicswarm search` "
        "prints): through the node's API when a node runs there, else straight from the repository.",
    )
    add_data_arg(show)
    show.add_argument("doc_id", type=_doc_id, metavar="DOC", help="the document's number from a search hit")
    show.add_argument("--json", action="store_true", help="the API's document shape as one JSON object")
    show.set_defaults(func=run_show)

    mark = sub.add_parser(
        "feedback",
        help="mark a search hit relevant or irrelevant: it trains its topic and personalises the ranking",
        description="A relevant page becomes a positive training document of its topic, an irrelevant one "
        "a negative one (the topic's model is retrained with it); given the query it was found by, the mark "
        "also fits your search ranking's weights. A peer's result holds only a preview: its page is "
        "fetched to train on, which needs the running node.",
    )
    add_data_arg(mark)
    mark.add_argument("doc_id", type=_doc_id, metavar="DOC", help="the document's number from a search hit")
    mark.add_argument(  # named by the metavar when left out: "required: mark" said not what to give
        "mark",
        choices=("relevant", "irrelevant"),
        metavar="relevant|irrelevant",
        help="what the page is to you",
    )
    mark.add_argument("--query", help="the search that found it (its ranking signals fit your weights)")
    mark.add_argument("--user", default=DEFAULT_USER, help="whose mark it is (`search --user` ranks by it)")
    mark.add_argument("--json", action="store_true", help="print the answer as JSON")
    mark.set_defaults(func=run_feedback)


def _doc_id(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a document number: take `doc N` from a search hit")
    return int(text)


# -- show -----------------------------------------------------------------------------------------------
def run_show(args: argparse.Namespace) -> int:
    data = data_dir(args)
    client = node_client_or_none(data)
    if client is not None:
        with api_errors(), client:
            details = _node_document(client, args.doc_id)
    else:
        details = _stored_document(args)
    if args.json:
        print_json(details)
    else:
        print(without_controls("\n".join(document_lines(details))))  # as in print_hits
    return 0


def _stored_document(args: argparse.Namespace) -> dict[str, Any]:
    from node.cli.search import open_crawled_repository
    from node.stored_state import document_details

    repo = open_crawled_repository(args)
    try:
        details = document_details(repo, args.doc_id)
    finally:
        repo.close()
    if details is None:
        raise CliError(no_document(args.doc_id))
    return details


def _node_document(client: NodeClient, doc_id: int) -> dict[str, Any]:
    """The running node's document; a number it does not hold is worded as without a node (the API's own
    detail names the JSON field, doc_id, which a CLI user never sees)."""
    from node.client import NodeError

    try:
        return client.document(doc_id)
    except NodeError as exc:
        if exc.status == 404:
            raise CliError(no_document(doc_id)) from exc
        raise


def no_document(doc_id: int) -> str:
    return f"no document {doc_id}: take its number from a search hit (`doc N`)"


def document_lines(doc: dict[str, Any]) -> list[str]:
    """A stored page as a person reads it (the UI's document view, in plain text)."""
    confidence = "-" if doc["confidence"] is None else f"{doc['confidence']:.2f}"
    judged = "accepted by" if doc["accepted"] else "not accepted by"
    lines = [
        doc["title"] or "(no title)",
        f"url        {doc['url']}",
    ]
    if doc["final_url"] and doc["final_url"] != doc["url"]:
        lines.append(f"           redirected to {doc['final_url']}")
    lines += [
        f"topic      {doc['topic'] or '-'}  conf {confidence}  {judged} its topic's classifier",
        f"verdict    {doc['verdict'] or NOT_JUDGED}",
    ]
    fetched = _when(doc["fetched_at"])
    if doc["origin"] != "local":
        peers = ", ".join(doc["origins"] or [doc["origin"]])
        lines.append(f"origin     a result of {peers}, received {fetched}: this node holds its preview")
    else:
        language = f"  language {doc['lang']}" if doc["lang"] else ""
        lines.append(
            f"fetched    {fetched}  HTTP {doc['status']}  {doc['content_type'] or '-'}  "
            f"{doc['bytes']:,} bytes  depth {doc['depth']}  {doc['links']} links{language}"
        )
    for key, what in (("duplicate_of", "a copy of"), ("near_duplicate_of", "nearly a copy of")):
        if doc.get(key) is not None:
            lines.append(f"duplicate  {what} document {doc[key]}")
    for mark in doc["feedback"]:
        query = f" (query {mark['query']!r})" if mark.get("query") else ""
        lines.append(f"feedback   {mark['kind']} {_when(mark['at'])}{query}")
    shown, length = len(doc["text_preview"]), doc["text_length"]
    if shown >= length:
        extent = f"all {length:,} characters"
    else:
        extent = f"the first {shown:,} of {length:,} characters; `topicswarm export --format jsonl` has all"
    lines += ["", f"text ({extent}):"]
    lines += textwrap.wrap(" ".join(doc["text_preview"].split()), PREVIEW_WIDTH) or ["(no text)"]
    return lines


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at else "-"


# -- feedback -------------------------------------------------------------------------------------------
def run_feedback(args: argparse.Namespace) -> int:
    relevant = args.mark == "relevant"
    data = data_dir(args)
    client = node_client_or_none(data)
    if client is not None:
        with api_errors(), client:
            document = _node_document(client, args.doc_id)
            answer = client.feedback(args.doc_id, relevant=relevant, query=args.query, user=args.user)
    else:
        document = _stored_document(args)
        answer = _mark_stored(data, document, relevant, args.query, args.user)
    if args.json:
        print_json(answer)
        return 0
    print(feedback_text(document, args.mark, args.query, answer.get("fetching")))
    return 0


def _mark_stored(
    data: DataDir, document: dict[str, Any], relevant: bool, query: str | None, user: str
) -> dict[str, Any]:
    """The mark the node's API stores, stored without a node: only on the node's own pages (a peer's
    result is trained on once its page is fetched, which the running node does)."""
    from crawler.feedback import IRRELEVANT, RELEVANT, FeedbackError, record_feedback
    from crawler.search import SearchError

    if document["origin"] != "local":
        raise CliError(
            f"document {document['doc_id']} is a peer's result, of which this node holds a preview: its page "
            f"is fetched to train on, which the node does; start it with `topicswarm node run --data "
            f"{data.root}` and mark it again"
        )
    repo = open_repository(data.repository)
    try:
        kind = RELEVANT if relevant else IRRELEVANT
        record_feedback(repo, document["doc_id"], kind, query=query, user=user)
    except (FeedbackError, SearchError) as exc:
        raise CliError(str(exc)) from exc
    finally:
        repo.close()
    return {"ok": True}


def feedback_text(document: dict[str, Any], mark: str, query: str | None, fetching: str | None) -> str:
    """What the mark does, in the user's terms."""
    title = document["title"] or document["url"]
    topic = document["topic"]
    said = f"marked document {document['doc_id']} ({title}) {mark}"
    if topic:
        polarity = "positive" if mark == "relevant" else "negative"
        said += f": a {polarity} training document of {topic} from the next retraining"
    if query:
        said += f"; found by {query!r}, it fits your search ranking's weights"
    if fetching:
        said += f"; its page is being fetched to train on ({fetching})"
    return said
