"""`topicswarm topics`: import a topic taxonomy from browser bookmarks or a folder tree, and list it.

`import` reads the whole file first (a malformed one is refused with its line, nothing stored), fetches the
bookmarked pages as training documents, and replaces the stored taxonomy in one transaction. `crawl` then
focuses on these topics.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.settings import CrawlSettings
from node.cli.common import (
    CliError,
    add_data_arg,
    api_errors,
    data_dir,
    data_dir_for_writing,
    existing_data_dir,
    node_client_or_none,
    open_repository,
    print_json,
)
from node.client import NodeClient
from node.config import ConfigError, load_config
from node.datadir import DataDir
from node.wording import HARVEST_MEANS, clipped

LABEL_WIDTH = 48  # `topics list`'s topic column: a longer name loses its middle

if TYPE_CHECKING:  # the repository and the taxonomy load when a command reads them, not when it parses
    from crawler.repository import Repository
    from crawler.taxonomy import Taxonomy


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("topics", help="import and list the topics the crawler focuses on")
    commands = parser.add_subparsers(dest="topics_command", metavar="COMMAND", required=True)
    importer = commands.add_parser(
        "import",
        help="replace the topics with a browser's bookmarks or a folder of topic folders",
        description="Replace the imported topics (subtopics you accepted from a refinement stay) with a "
        "browser's bookmarks or a folder tree of .html, .txt, .md and "
        ".pdf documents (OTHERS folders are negative examples). Bookmarks: any browser's HTML export, "
        "Chrome's or Edge's own Bookmarks file, "
        "a Firefox backup (.json, .jsonlz4) or Safari's Bookmarks.plist. A running node on the data "
        "directory imports them itself and starts crawling their bookmarks.",
    )
    add_data_arg(importer)
    importer.add_argument("source", type=Path, help="a bookmarks file (see above) or FOLDER")
    importer.add_argument(
        "--no-fetch",
        action="store_true",
        help="answer before fetching the bookmarked pages: the node fetches them (in the background when it "
        "runs, else when it starts)",
    )
    importer.set_defaults(func=run_import)
    lister = commands.add_parser("list", help="show the stored topics and their training documents")
    add_data_arg(lister)
    lister.add_argument("--json", action="store_true", help="one JSON object per topic")
    lister.set_defaults(func=run_list)
    keywords = commands.add_parser(
        "keywords",
        help="show or set a topic's indicator keywords (its pages must hold one of them)",
        description="Show a topic's indicator keywords, or replace them: a page is accepted into the topic "
        "only when it holds one of them (stemmed as pages are). A running node trains its crawl's topic "
        "model again with them at once; pages already stored keep their verdict.",
    )
    add_data_arg(keywords)
    keywords.add_argument("topic", metavar="KEY", help='the topic key, e.g. "Databases"')
    keywords.add_argument(  # a default, or argparse counts the optional words as required beside KEY
        "words", nargs="*", default=[], help='the new keywords, a "quoted phrase" for several words'
    )
    keywords.add_argument("--clear", action="store_true", help="remove the topic's keywords")
    keywords.add_argument("--json", action="store_true", help='print {"key", "keywords"} as JSON')
    keywords.set_defaults(func=run_keywords)
    rename = commands.add_parser(
        "rename",
        help="give a topic and its subtopics a new key: the name of the community it joins",
        description="Give a topic and its subtopics a new key, e.g. your folder Math the key "
        "Science/Mathematics that a community of peers uses. Its documents, training documents, queued "
        "links, keywords and settings move with it; the models of its old community are dropped and the "
        "node trains its own again under the new key. A later `topics import` of the same bookmarks files "
        "the folder under the new key. Run it with the node stopped.",
    )
    add_data_arg(rename)
    rename.add_argument("old", metavar="KEY", help="the topic's key now, as `topics list` shows it")
    rename.add_argument("new", metavar="NEW_KEY", help="its new key: folder names joined by /")
    rename.add_argument("--json", action="store_true", help="the rename as one JSON object")
    rename.set_defaults(func=run_rename)


def _settings(args: argparse.Namespace) -> CrawlSettings:
    try:
        return load_config(data_dir(args).config).crawler
    except ConfigError as exc:
        raise CliError(str(exc)) from exc


def run_import(args: argparse.Namespace) -> int:
    """The file is read here first (a malformed one fails before anything is sent or stored); when a node
    runs on the data directory it imports through the API (one writer, and it seeds its crawl at once)."""
    import trio

    from crawler.taxonomy import FAILED, TaxonomyError, failure_counts, read_taxonomy, store_taxonomy
    from node.wording import counted

    try:
        taxonomy = read_taxonomy(args.source)
    except TaxonomyError as exc:
        raise CliError(str(exc)) from exc
    data = data_dir_for_writing(args)
    client = node_client_or_none(data)
    if client is not None:
        answer = _import_through(client, args.source.resolve(), fetch=not args.no_fetch)
        counts = (len(answer["imported"]), answer["documents"], answer["failed"], answer["skipped"])
        errors = answer.get("failed_by_error") or {}
        renamed = answer.get("renamed") or {}
    else:
        if not args.no_fetch:
            taxonomy = trio.run(fetch_training_pages, taxonomy, _settings(args))
        repo = open_repository(data.repository)
        try:
            taxonomy, renamed = store_taxonomy(repo, taxonomy)
        finally:
            repo.close()
        failed = sum(1 for d in taxonomy.documents if d.status == FAILED)
        counts = (len(taxonomy.topics), len(taxonomy.documents), failed, list(taxonomy.skipped))
        errors = failure_counts(taxonomy)
    topics, documents, failed, skipped = counts
    print(
        f"imported {counted(topics, 'topic')} with {counted(documents, 'training document')} "
        f"from {args.source}" + (f"; {failed} could not be fetched" if failed else "")
    )
    for before, after in renamed.items():
        print(f"  {before} is filed under {after}, as you renamed it")
    for note in skipped:
        print(f"  skipped {note}")
    if failed:
        print(fetch_failure_advice(errors, failed, documents))
    return 0


def fetch_failure_advice(errors: dict[str, int], failed: int, documents: int) -> str:
    """Why bookmarked pages were not fetched and what that means: a topic learns only from pages with
    text, and failed ones are not fetched again by themselves."""
    kinds = ", ".join(f"{kind} {n}" for kind, n in errors.items()) or "unknown"
    if failed >= documents:
        effect = "no topic has training text, so the crawl cannot focus"
    else:
        effect = "the topics learn from the other pages"
    hint = ""
    if any(kind.startswith(("robots", "connect", "timeout", "reset")) for kind in errors):
        hint = " (the hosts did not answer: is the network reachable?)"
    return (
        f"  not fetched: {kinds}{hint}; {effect}. Fix the cause and run `topicswarm topics import` "
        "again to fetch them."
    )


def _import_through(client: NodeClient, source: Path, fetch: bool) -> dict:
    with api_errors(), client:
        return client.import_topics(path=source, fetch=fetch)


async def fetch_training_pages(taxonomy: Taxonomy, settings: CrawlSettings) -> Taxonomy:
    from crawler.fetch import Fetcher
    from crawler.taxonomy import fetch_documents

    fetcher = Fetcher(settings)
    try:
        return await fetch_documents(taxonomy, fetcher, concurrency=settings.concurrent_requests)
    finally:
        await fetcher.aclose()


def run_list(args: argparse.Namespace) -> int:
    from crawler.taxonomy import load_taxonomy, topic_summary
    from node.stored_state import filed_counts, harvest_figures

    repo = _open_imported(existing_data_dir(args))
    try:
        taxonomy = load_taxonomy(repo)
        harvest, pages = harvest_figures(repo), filed_counts(repo)
    finally:
        repo.close()
    if taxonomy is None:
        raise CliError("no topics imported: run `topicswarm topics import bookmarks.html`")
    unfetched = set(harvest["unfetched_topics"])
    rows = [
        {
            **row,
            "pages": pages.get(row["key"], (0, 0))[0],
            "harvest": None if row["key"] in unfetched else harvest["harvest"].get(row["key"]),
        }
        for row in topic_summary(taxonomy)
    ]
    if args.json:
        for row in rows:
            print_json(row)
        return 0
    columns = f"{'pos':>5} {'neg':>5} {'text':>5} {'failed':>6} {'pages':>6} {'harvest':>7}"
    print(f"{'topic':<{LABEL_WIDTH}} {columns}")
    for row in rows:
        depth = row["key"].count("/") + 1 if row["key"] else 0
        label = "  " * max(depth - 1, 0) + (row["name"] if row["key"] else "(root: OTHERS)")
        counts = f"{row['positives']:>5} {row['negatives']:>5} {row['with_text']:>5} {row['failed']:>6}"
        rate = "-" if row["harvest"] is None else f"{row['harvest']:.2f}"
        print(f"{clipped(label, LABEL_WIDTH):<{LABEL_WIDTH}} {counts} {row['pages']:>6} {rate:>7}")
    print("pages    the node's own pages its classifier filed in the topic or below")
    print(f"harvest  {HARVEST_MEANS}; -: none yet")
    return 0


def run_keywords(args: argparse.Namespace) -> int:
    """Through the node's API when a node runs on the data directory (it retrains its crawl's model with
    them), else straight to the repository (the node reads them when it starts)."""
    if args.words and args.clear:
        raise CliError("give keywords or --clear, not both")
    data = existing_data_dir(args)
    change = args.clear or bool(args.words)
    client = node_client_or_none(data)
    if client is not None:
        with api_errors(), client:
            if change:
                words = client.set_keywords(args.topic, args.words)["keywords"]
            else:
                words = _listed_keywords(client, args.topic)
    else:
        words = _stored_keywords(data, args.topic, args.words if change else None)
    if args.json:
        print_json({"key": args.topic, "keywords": words})
    elif words:
        print(f"{args.topic}: {', '.join(words)} (a page of the topic must hold one of them)")
    else:
        print(f"{args.topic}: no indicator keywords (set some with `topicswarm topics keywords KEY WORD...`)")
    return 0


def run_rename(args: argparse.Namespace) -> int:
    """Offline only: a running node holds topic keys in its crawl queues, models and communities."""
    from crawler.errors import TaxonomyError
    from node.client import node_running
    from node.topic_rename import rename_topic
    from node.wording import counted

    data = existing_data_dir(args)
    if node_running(data):
        raise CliError(
            f"a node runs on {data.root}: stop it first (`topicswarm node stop --data {data.root}`), "
            "rename, and run it again"
        )
    repo = _open_imported(data)
    try:
        answer = rename_topic(repo, args.old, args.new)
    except TaxonomyError as exc:
        raise CliError(str(exc)) from exc
    finally:
        repo.close()
    if args.json:
        print_json(answer)
        return 0
    new, subtopics = answer["new"], len(answer["moved"]) - 1
    below = f" and its {counted(subtopics, 'subtopic')}" if subtopics else ""
    print(
        f"renamed {answer['old']}{below} to {new}: {counted(answer['documents'], 'document')} and "
        f"{counted(answer['queued'], 'queued link')} moved"
    )
    models = answer["models"]
    dropped = (
        f"; it drops the {counted(models, 'model')} of {answer['old']} that peers sent" if models else ""
    )
    print(f"the node joins the community of {new} when it runs next{dropped}")
    print(f"a later `topics import` files the folder {answer['old']} under {new}")
    return 0


def _listed_keywords(client: NodeClient, topic: str) -> list[str]:
    from crawler.taxonomy import unknown_topic

    rows = client.topics()["topics"]
    for row in rows:
        if row["key"] == topic:
            return row["keywords"]
    raise CliError(unknown_topic(topic, [row["key"] for row in rows]))


def _stored_keywords(data: DataDir, topic: str, words: list[str] | None) -> list[str]:
    """The topic's keywords in the repository, replaced by `words` first when given."""
    from crawler.errors import TaxonomyError
    from crawler.taxonomy import clean_keywords, load_keywords, load_taxonomy, save_keywords, unknown_topic

    repo = _open_imported(data)
    try:
        taxonomy = load_taxonomy(repo)
        if taxonomy is None or topic not in taxonomy.topics:
            raise CliError(unknown_topic(topic, taxonomy.topics if taxonomy else ()))
        if words is not None:
            try:
                save_keywords(repo, topic, clean_keywords(words))
            except TaxonomyError as exc:
                raise CliError(str(exc)) from exc
        return list(load_keywords(repo).get(topic, ()))
    finally:
        repo.close()


def _open_imported(data: DataDir) -> Repository:
    """The repository topics were imported into; an error that says how to import them when there is none."""
    if not data.repository.exists():
        raise CliError(f"no repository at {data.repository}: import topics with `topicswarm topics import`")
    return open_repository(data.repository)
