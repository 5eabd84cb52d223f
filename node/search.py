"""A running node's search: ranked results over its own and its peers' pages, a hit's document, and the
user's marks on hits (feedback), which fit the user's ranking weights and train the topics' classifiers.

`Search` is the service's `search`. A relevance mark on a peer's result trains on the page itself,
fetched in the background as a bookmark is: the peer sends only a preview, too little to train on.
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3
from typing import TYPE_CHECKING, Any

from crawler.errors import RepositoryError
from crawler.repository import Repository
from node.errors import NodeServiceError, not_found
from node.stored_state import document_details

if TYPE_CHECKING:
    from node.service import NodeService

log = logging.getLogger(__name__)


class Search:
    """Search, documents and feedback of one node (`NodeService.search`)."""

    def __init__(self, service: NodeService) -> None:
        self.service = service

    async def ranked(
        self, query: str, weights: str | None = None, user: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """Ranked search; `weights` as "SIGNAL=W,..." (the CLI's --weights), else the weights fitted to
        `user`'s feedback (default: the default user's)."""
        from crawler.feedback import personal_weights
        from crawler.query import DEFAULT_USER
        from crawler.ranking import RankingError, RankingWeights
        from crawler.search import SearchError, ranked_search

        def run(repo: Repository) -> dict[str, Any]:
            if weights:
                options["weights"] = RankingWeights.parse(weights)
            elif options.get("weights") is None:  # none asked for: the user's, fitted to their feedback
                options["weights"] = personal_weights(repo, user or DEFAULT_USER)
            return ranked_search(repo, query, **options).to_api()

        try:
            return await self.service.db(run)
        except (SearchError, RankingError) as exc:
            raise NodeServiceError("bad_query", str(exc)) from exc

    async def document(self, doc_id: int) -> dict[str, Any]:
        found = await self.service.db(document_details, doc_id)
        if found is None:
            raise not_found(f"no document {doc_id}: take doc_id from a search hit")
        return found

    async def feedback(
        self, doc_id: int, kind: str, query: str | None = None, user: str | None = None
    ) -> dict[str, Any]:
        """Store the mark (`user`'s: their ranking weights are fitted to their marks, `search --user`); a
        relevance mark on a peer's result trains on the page, fetched in the background (`_train_on_page`),
        and the answer names it (`fetching`)."""
        from crawler.feedback import OPENED, RELEVANT, FeedbackError, record_feedback, training_document
        from crawler.search import SearchError

        def run(repo: Repository) -> Any:
            document = repo.document(doc_id)
            pooled = document is not None and document["origin"] is not None
            marker = {"user": user} if user else {}
            record = record_feedback(repo, doc_id, kind, query=query, train=not pooled, **marker)
            if pooled and kind != OPENED and record.topic:
                return training_document(document, record.topic, kind == RELEVANT)
            return None

        try:
            marked = await self.service.db(run)
        except FeedbackError as exc:
            status = 404 if "no document" in str(exc) else 400
            raise NodeServiceError("not_found" if status == 404 else "bad_request", str(exc), status) from exc
        except SearchError as exc:  # the mark weighs the query's ranking signals: it must be searchable
            raise NodeServiceError("bad_query", f"the mark's query: {exc}") from exc
        if marked is None:
            return {"ok": True}
        nursery = self.service.nursery
        assert nursery is not None  # the API serves inside `run`
        nursery.start_soon(self._train_on_page, marked)
        return {"ok": True, "fetching": marked.url}

    async def _train_on_page(self, marked: Any) -> None:
        """A peer's result holds only the peer's preview (`cooperation.preview_chars` characters), too little
        to train on: the page is fetched as a bookmark is (robots.txt, size and time limits), and its text
        becomes the training document; the preview does when the fetch fails. A disk that cannot take it
        loses the training document, not the node."""
        from crawler.feedback import FEEDBACK_SOURCE
        from crawler.taxonomy import FETCHED, PENDING, Taxonomy, set_marked_document

        pending = dataclasses.replace(marked, text="", status=PENDING)
        fetched = await self.service.topics.fetch_training_pages(
            Taxonomy((marked.topic,), (pending,), FEEDBACK_SOURCE)
        )
        page = fetched.documents[0]
        document = marked
        if page.status == FETCHED and page.text.strip():
            document = dataclasses.replace(marked, title=page.title or marked.title, text=page.text)
        else:
            log.info("training on the preview of %s: fetching it failed (%s)", marked.url, page.error)
        try:
            await self.service.db(set_marked_document, document)
        except (RepositoryError, sqlite3.Error, OSError) as exc:
            log.warning("could not store the marked page %s as a training document: %s", marked.url, exc)
            self.service.publish(
                "log", {"message": f"feedback on {marked.url} not stored for training: {exc}"}
            )
