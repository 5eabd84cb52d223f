"""What a newcomer saw wrong on the UI's screens over a real node (session 3), pinned over a stand-in link:
history dropped from the dashboard, a status bar whose problem fell off its end, an offline node's Meta
screen offering `b` in vain, topics marked running after the crawl finished, previews one word per line."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import DataTable, Label, Static, Tree

import tui.app
import tui.screens.base
from node.client import NodeError, NodeUnreachable
from tui.app import TopicSwarmApp
from tui.link import NodeLink
from tui.records import (
    CrawlFigures,
    CurvePoint,
    Document,
    Hit,
    LossSetting,
    MetaState,
    MetricSample,
    Peer,
    ReceivedModel,
    SearchResults,
    Status,
    Topic,
    short_peer_id,
)
from tui.screens.base import NO_TOPICS
from tui.screens.dashboard import summary
from tui.screens.meta import MetaScreen, build_report
from tui.screens.peers import PeersScreen
from tui.screens.refine import RefineScreen
from tui.screens.results import ResultsScreen, document_view, highlighted, preview
from tui.screens.topics import TopicsScreen, topic_details, topic_label
from tui.telemetry import Telemetry
from tui.widgets.plots import NO_META, CurvePlot, time_range, value_range
from tui.widgets.prompt import Prompt
from tui.widgets.status_bar import StatusBar

SIZE = (100, 30)
T0 = 1_700_000_000.0
OFFLINE = "meta needs peers: this node runs offline; restart it without --offline"
FINISHED = CrawlFigures(
    "running", False, 200, 0.0, 568, {}, 0, "finished", "reached max_pages (200 of 200 documents)", 3.5
)
CRAWLING = CrawlFigures("running", True, 20, 4.0, 300, {}, 0, "crawling")
PEER = "12D3KooWPeerBB"
URL = "http://127.0.0.12:8080/transactional.html"
TOPIC = Topic("Databases", "Databases", None, 47, 0, 0.78, None, (), "running", None)


def sample(t: float, pages_per_s: float) -> MetricSample:
    return MetricSample(t, 10, pages_per_s, 100, {}, 0, 0, 0, {"Databases": 0.5})


class StandInLink(NodeLink):
    """A node whose crawl finished and whose cooperation answers (meta, proposals, models) are `refusal`."""

    def __init__(self, refusal: NodeError) -> None:
        super().__init__(Path("/nonexistent"))
        self.refusal = refusal

    async def status(self) -> Status:
        return Status(None, FINISHED, {"Databases": 0.78}, 0, 0, 0, 200, 0, False, False)

    async def metrics(self, since: float = 0.0) -> list[MetricSample]:
        return []

    async def topics(self) -> list[Topic]:
        return [TOPIC]

    async def meta(self, topic: str):
        raise self.refusal

    async def proposals(self, topic: str | None = None):
        raise self.refusal

    async def peers(self):
        return []

    async def document(self, doc_id: int) -> Document:
        return Document.from_json(
            {
                "doc_id": doc_id,
                "url": URL,
                "title": "SQLite Is Transactional",
                "accepted": True,
                "text_preview": "A transactional\ndatabase",
                "text_length": 5000,
                "bytes": 4900,
                "links": 17,
                "feedback": [{"kind": "opened", "at": T0, "query": "sqlite"}],
            }
        )

    async def search(self, q: str, **options) -> SearchResults:
        hit = Hit(4, URL, "SQLite Is Transactional", "Databases", 0.93, "local", ("local",), 1.9, "", "")
        return SearchResults(q, (hit,), 1, browsed=not q.strip())

    async def models(self, topic: str | None = None):
        raise self.refusal

    async def stats_events(self):
        await asyncio.Event().wait()
        yield "stats", FINISHED


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def settle(pilot, predicate, timeout: float = 10.0) -> None:
    waited = 0.0
    while not predicate():
        assert waited < timeout, "the UI did not get there (hang guard)"
        await pilot.pause(0.1)
        waited += 0.1


async def search_until_hits(pilot, app, words: str) -> None:
    """Search from the Results screen and wait for the answer's hits."""
    await pilot.press("3", "slash", *words, "enter")
    await settle(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.results.hits)


def test_metrics_history_arriving_after_a_live_point_is_kept_in_time_order():
    telemetry = Telemetry()
    telemetry.add_live(CRAWLING, T0 + 100)  # the event stream answered before the first metrics poll
    telemetry.add_samples([sample(T0 + 10, 1.0), sample(T0 + 50, 2.0)])
    assert [t for t, _ in telemetry.pages_per_s] == [T0 + 10, T0 + 50, T0 + 100]
    assert [t for t, _ in telemetry.frontier] == [T0 + 10, T0 + 50, T0 + 100]
    telemetry.add_samples([sample(T0 + 50, 9.0)])  # a sample already held is not added twice
    assert len(telemetry.pages_per_s) == 3


def test_plots_of_counts_start_at_zero_and_a_lone_point_gets_a_past():
    assert value_range([0.0, 0.0]) == (0.0, 1.0)
    assert value_range([3.0, 7.5]) == (0.0, 7.5)
    assert value_range([-2.0, 1.0]) == (-2.0, 1.0)
    assert time_range([[(T0, 1.0)]], T0) == (-60.0, 0.0)
    assert time_range([[(T0 - 30, 1.0), (T0, 2.0)]], T0) == (-30.0, 0.0)


def test_preview_line_breaks_become_spaces():
    assert highlighted("Home\nMenu\n\nSQLite is [[Transactional]]\nA db") == (
        "Home Menu SQLite is [b reverse]Transactional[/] A db"
    )


def test_a_topic_set_running_says_when_the_node_fetches_nothing():
    finished = topic_details(TOPIC, FINISHED)
    assert "fetches nothing: reached max_pages (200 of 200 documents)" in finished
    assert "fetches nothing" not in topic_details(TOPIC, CRAWLING)
    assert topic_label(TOPIC, FINISHED).plain.startswith("▷ ")
    assert topic_label(TOPIC, CRAWLING).plain.startswith("▶ ")


def test_a_topic_nothing_was_fetched_for_shows_no_harvest_of_zero():
    fresh = Topic.from_json({"key": "Databases", "harvest_rate": 0.0, "fetched": 0})
    assert "harvest not crawled yet" in topic_label(fresh).plain
    assert "harvest rate: not crawled yet" in topic_details(fresh)
    crawled = Topic.from_json({"key": "Databases", "harvest_rate": 0.0, "fetched": 12})
    assert "harvest 0.00" in topic_label(crawled).plain  # fetched and all rejected: a real 0
    assert "harvest 0.78" in topic_label(TOPIC).plain  # an older node that does not say: its rate


def test_a_topics_harvest_says_it_is_the_share_its_classifier_accepted():
    """The demo's summary prints a share by the web's ground truth too: the UI says which harvest it shows."""
    topic = Topic.from_json({"key": "Databases", "harvest_rate": 10 / 90, "fetched": 90})
    assert "harvest rate: 0.111 (its classifier accepted 10 of 90 pages fetched for it)" in topic_details(
        topic
    )
    older = Topic.from_json({"key": "Databases", "harvest_rate": 0.5})  # a node that does not say how many
    assert "harvest rate: 0.500 (the share of the pages fetched for it that its classifier accepted)" in (
        topic_details(older)
    )


def test_a_topic_whose_accuracy_is_being_measured_says_so_not_that_it_has_none():
    answer = {
        "key": "Databases",
        "quality": {"accuracy": None, "why": "being measured: 5-fold cross-validation", "measuring": True},
    }
    measuring = Topic.from_json(answer)
    assert measuring.measuring and measuring.accuracy is None
    assert "held-out acc …" in topic_label(measuring).plain
    assert "meta-classifier accuracy: being measured: 5-fold" in topic_details(measuring)
    unmeasured = Topic.from_json({"key": "Databases", "quality": {"accuracy": None, "why": "too few"}})
    assert not unmeasured.measuring
    assert "held-out acc –" in topic_label(unmeasured).plain
    assert "not measured (too few)" in topic_details(unmeasured)


@pytest.mark.anyio
async def test_a_problem_is_shown_at_the_start_of_the_status_bar_and_clears_after_its_hold(monkeypatch):
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.telemetry.status is not None)
        app.show_problem("unavailable: " + OFFLINE)
        await pilot.pause()
        line = str(app.screen.query_one(StatusBar).content)
        assert ("unavailable: " + OFFLINE) in line[:100]  # before the figures, which run past 100 columns
        app.report_reachable()  # the node answers again: the refusal stays a while
        assert app.problem
        monkeypatch.setattr(tui.app, "PROBLEM_HOLD", 0.0)
        app.report_reachable()
        await pilot.pause()
        assert not app.problem and not app.screen.query_one(StatusBar).problem


@pytest.mark.anyio
async def test_meta_screen_of_an_offline_node_says_why_instead_of_offering_a_build():
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("unavailable", OFFLINE, 503)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(pilot, lambda: isinstance(app.screen, MetaScreen) and OFFLINE in app.problem)
        assert app.screen.query_one(CurvePlot).empty_text == OFFLINE
        await pilot.press("right_square_bracket")  # a loss step says why, not "press b to build one"
        await pilot.pause()
        assert [n.message for n in app._notifications][-1] == OFFLINE


@pytest.mark.anyio
async def test_meta_screen_without_a_meta_classifier_yet_offers_a_build_and_reports_no_error():
    missing = NodeError("not_found", "no meta-classifier for 'Databases' yet: build one", 404)
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(missing))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(pilot, lambda: isinstance(app.screen, MetaScreen) and app.screen.meta_missing)
        assert app.screen.query_one(CurvePlot).empty_text == NO_META
        assert app.problem == ""


class RebuildingLink(StandInLink):
    """A node whose meta-classifier is built again for every new loss: its curve follows the loss."""

    def __init__(self) -> None:
        super().__init__(NodeError("unavailable", OFFLINE, 503))
        self.loss = 0.2

    async def meta(self, topic: str) -> MetaState:
        curve = tuple(CurvePoint(x / 10, 0.5 + self.loss) for x in range(10))
        return MetaState(topic, self.loss, curve, 40, 10, curve, 50, 5, "")

    async def set_loss(self, topic: str, loss: float) -> LossSetting:
        self.loss = loss
        return LossSetting(loss, 30, 20)


@pytest.mark.anyio
async def test_a_new_loss_shows_the_meta_classifier_the_node_built_again_for_it():
    app = TopicSwarmApp(Path("/nonexistent"), link=RebuildingLink())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await settle(pilot, lambda: isinstance(app.screen, MetaScreen) and app.screen.meta is not None)
        screen = app.screen
        assert screen.meta.curve[0].accuracy == pytest.approx(0.7)
        await pilot.press("l", "ctrl+a", "ctrl+k", "0", ".", "4", "enter")
        await settle(pilot, lambda: screen.meta.curve[0].accuracy == pytest.approx(0.9))
        assert (screen.meta.loss, screen.meta.kept) == (0.4, 40)  # the rebuilt one's counts, not the stale
        assert screen.query_one("#loss").value == "0.40"


@pytest.mark.anyio
async def test_refine_and_peers_screens_of_an_offline_node_say_why_they_stay_empty():
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("unavailable", OFFLINE, 503)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(pilot, lambda: isinstance(app.screen, RefineScreen) and OFFLINE in app.problem)
        details = app.screen.query_one("#proposal-details", Static)
        await settle(pilot, lambda: OFFLINE in str(details.content))
        await pilot.press("4")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        models = app.screen.query_one("#models", DataTable)
        await settle(pilot, lambda: OFFLINE in str(models.border_title))


@pytest.mark.anyio
async def test_open_without_a_display_copies_the_url_instead_of_starting_a_browser_in_the_terminal(
    monkeypatch,
):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setattr("webbrowser.open", lambda *a, **k: pytest.fail("a browser was started"))
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    copied: list[str] = []
    monkeypatch.setattr(app, "copy_to_clipboard", copied.append)
    async with app.run_test(size=SIZE) as pilot:
        await search_until_hits(pilot, app, "sqlite")
        await pilot.press("o")
        await settle(pilot, lambda: copied == [URL])


@pytest.mark.anyio
async def test_enter_on_a_result_shows_its_stored_page_and_enter_again_the_result():
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await search_until_hits(pilot, app, "sqlite")
        pane = app.screen.query_one("#preview", Static)
        await pilot.press("enter")
        await settle(pilot, lambda: app.screen.document_shown == 4)
        shown = str(pane.content)
        assert "first 24 of 5,000 characters" in shown and "A transactional database" in shown
        assert "17 links" in shown and "your feedback: opened" in shown
        await pilot.press("enter")
        await settle(pilot, lambda: app.screen.document_shown is None)
        assert "first 24 of" not in str(pane.content)


@pytest.mark.anyio
async def test_dashboard_without_an_answer_from_the_node_claims_no_crawl_state(tmp_path):
    (tmp_path / "no-node-here").mkdir()  # a data directory no node runs for
    app = TopicSwarmApp(tmp_path / "no-node-here")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: "no node is running" in app.problem)
        app.screen.reload()
        await pilot.pause()
        shown = str(app.screen.query_one("#summary", Static).content)
        assert "no answer from the node yet" in shown and "crawl stopped" not in shown


class CooperatingLink(StandInLink):
    """A node holding its own model and a peer's it could not measure on labelled documents (the models
    listing with `weight` from the last meta build and `weight_measured` from labels)."""

    async def models(self, topic: str | None = None) -> list[ReceivedModel]:
        return [
            ReceivedModel.from_json(m)
            for m in [
                {
                    "topic": "Databases",
                    "origin": "local",
                    "version": 1,
                    "kind": "linear",
                    "accuracy_local": 0.8,
                    "evaluated": 20,
                    "weight_measured": 1.22,
                    "weight": 0.65,
                },
                {
                    "topic": "Databases",
                    "origin": PEER,
                    "version": 1,
                    "kind": "linear",
                    "accuracy_local": None,
                    "evaluated": 0,
                    "weight_measured": 0.0,
                    "weight": 4.6,
                },
                {"topic": "Databases", "origin": PEER, "version": 3, "kind": "centroids", "weight": None},
            ]
        ]


@pytest.mark.anyio
async def test_peers_screen_shows_the_weight_a_model_has_in_the_meta_classifier_beside_its_label_weight():
    app = TopicSwarmApp(Path("/nonexistent"), link=CooperatingLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        table = app.screen.query_one("#models", DataTable)
        await settle(pilot, lambda: table.row_count == 3)
        rows = {(str(r[1]), str(r[2])): [str(c) for c in r[4:]] for r in map(table.get_row_at, range(3))}
    assert rows[("local", "linear")] == ["0.80 of 20", "1.22", "0.65"]
    assert rows[(short_peer_id(PEER), "linear")] == ["–", "0.00", "4.60"]
    assert rows[(short_peer_id(PEER), "centroids")] == ["–", "–", ""]


def test_a_build_report_counts_the_own_model_and_peer_models_in_plain_english():
    assert build_report({"peers_used": 1}).startswith("built from its own model and 1 peer model;")
    assert build_report({"peers_used": 0}).startswith("built from its own model alone")
    met = build_report({"peers_used": 0, "peers_needed": 0, "error_goal": 0.05})
    assert "it meets the error goal 0.05 by itself, so no peer model was combined" in met
    assert "no peer model of this topic could be used" not in met


def test_a_pooled_result_shows_the_peers_preview_not_fetch_figures_this_node_never_had():
    pooled = Document.from_json(
        {"doc_id": 9, "url": URL, "title": "Serverless", "origin": PEER, "text_preview": "Most SQL engines"}
    )
    shown = document_view(pooled)
    assert f"a result of peer {PEER[:10]}" in shown and "the peer's preview" in shown
    assert "links" not in shown and "depth" not in shown


def test_a_models_listing_before_weight_measured_existed_reads_weight_as_the_label_weight():
    older = ReceivedModel.from_json({"topic": "Databases", "origin": PEER, "kind": "linear", "weight": 0.61})
    assert (older.weight, older.meta_weight) == (0.61, None)


class PrefixSearchLink(StandInLink):
    """Finds "postgres" only as the start of a word (PostgreSQL), and nothing else."""

    async def search(self, q: str, **options) -> SearchResults:
        if q != "postgres":  # the link counts the results without the filters: 3 with "xyzzy", none else
            return SearchResults(q, (), 0, widened_total=3 if q == "xyzzy" else 0)
        hit = Hit(4, URL, "PostgreSQL roles", "Databases", 0.93, "local", ("local",), 1.9, "", "")
        return SearchResults(q, (hit,), 1, prefix=True)


@pytest.mark.anyio
async def test_results_say_when_the_words_matched_as_starts_and_which_filters_narrowed_an_empty_answer():
    app = TopicSwarmApp(Path("/nonexistent"), link=PrefixSearchLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await search_until_hits(pilot, app, "postgres")
        table = app.screen.query_one("#hits")
        assert table.border_title == "1 of 1 for “postgres” and words it starts"
        await pilot.press("slash", *"xyzzy", "enter")
        pane = app.screen.query_one("#preview", Static)
        await settle(pilot, lambda: "nothing found" in str(pane.content))
        assert str(pane.content) == (
            "nothing found for “xyzzy” with the verdict filter (try any verdict); 3 results without them"
        )
        await pilot.press("slash", *"nowhere", "enter")
        await settle(pilot, lambda: "nowhere" in str(pane.content))
        assert str(pane.content) == (
            "nothing found for “nowhere”: no page or pooled result here matches it, whatever the filters"
        )


class PooledResultLink(StandInLink):
    """Finds one result, a peer's; records every revisit asked for."""

    def __init__(self, refusal: NodeError) -> None:
        super().__init__(refusal)
        self.revisits: list[str] = []

    async def search(self, q: str, **options) -> SearchResults:
        hit = Hit(5, URL, "SQLite Is Transactional", "Databases", 0.93, PEER, (PEER,), 1.9, "", "")
        return SearchResults(q, (hit,), 1)

    async def revisit(self, url: str) -> dict:
        self.revisits.append(url)
        return {"due": 0, "not_revisited": [url], "state": "running"}


@pytest.mark.anyio
async def test_fetching_a_peers_result_again_is_explained_not_asked_of_the_node():
    link = PooledResultLink(NodeError("not_found", "none", 404))
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await search_until_hits(pilot, app, "sqlite")
        await pilot.press("f")
        await settle(pilot, lambda: any("a peer's result" in n.message for n in app._notifications))
    assert link.revisits == []


class EmptyNodeLink(StandInLink):
    """A node just initialised: no topics, no pages."""

    async def status(self) -> Status:
        return Status(None, FINISHED, {}, 0, 0, 0, 0, 0, False, False)

    async def topics(self) -> list[Topic]:
        return []

    async def search(self, q: str, **options) -> SearchResults:
        return SearchResults(q, (), 0, prefix=True)


@pytest.mark.anyio
async def test_a_node_without_topics_or_pages_says_how_to_get_some_on_meta_refine_and_results():
    app = TopicSwarmApp(Path("/nonexistent"), link=EmptyNodeLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.telemetry.status is not None)
        await pilot.press("5")
        await settle(pilot, lambda: isinstance(app.screen, MetaScreen))
        await settle(pilot, lambda: app.screen.query_one(CurvePlot).empty_text == NO_TOPICS)
        await pilot.press("b")  # no build offered in vain
        await pilot.pause()
        assert [n.message for n in app._notifications][-1] == NO_TOPICS
        await pilot.press("6")
        await settle(pilot, lambda: isinstance(app.screen, RefineScreen))
        details = app.screen.query_one("#proposal-details", Static)
        await settle(pilot, lambda: str(details.content) == NO_TOPICS)
        await pilot.press("3", "slash", *"sql", "enter")
        pane = app.screen.query_one("#preview", Static)
        await settle(pilot, lambda: "nothing found" in str(pane.content))
        assert "the node holds no pages yet" in str(pane.content)
        assert app.screen.query_one("#hits").border_title == "0 of 0 for “sql”"  # not "and words it starts"


class GrowingLink(StandInLink):
    """A node whose Databases topic holds one more page at each answer, and whose peers list grows."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))
        self.answers = 0

    async def status(self) -> Status:
        return Status("12D3KooWSelf", FINISHED, {}, 1, 0, 0, 200, 0, True, True)

    async def topics(self) -> list[Topic]:
        self.answers += 1
        return [replace(TOPIC, local=self.answers)]

    async def peers(self):
        return [Peer(f"12D3KooWPeer{i:02d}", (), T0, ("Databases",), 10, 10, ()) for i in range(3)]


@pytest.mark.anyio
async def test_topics_and_peers_screens_follow_the_node_without_a_refresh_key_and_keep_the_cursor(
    monkeypatch,
):
    monkeypatch.setattr(tui.app, "STATUS_INTERVAL", 0.1)
    monkeypatch.setattr(tui.screens.base, "LIVE_REFRESH", 0.3)
    link = GrowingLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen) and app.screen.topics)
        first = app.screen.topics["Databases"].local
        await settle(pilot, lambda: app.screen.topics["Databases"].local >= first + 2)
        assert "Databases" in str(app.screen.query_one("#topic-details", Static).content)
        await pilot.press("4")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        table = app.screen.query_one("#peers", DataTable)
        await settle(pilot, lambda: table.row_count == 3)
        table.focus()
        await pilot.press("down", "down")
        reloads = link.answers
        await settle(pilot, lambda: table.cursor_row == 2 and link.answers == reloads)  # peers only, below
        fetched = [0]
        original = link.peers

        async def counted():
            fetched[0] += 1
            return await original()

        link.peers = counted
        await settle(pilot, lambda: fetched[0] >= 2)
        assert table.cursor_row == 2


class TwoTopicsLink(GrowingLink):
    """GrowingLink with a second topic, Sysadmin, below Databases."""

    async def topics(self) -> list[Topic]:
        grown = await super().topics()
        return [*grown, replace(TOPIC, key="Sysadmin", name="Sysadmin", local=1)]


@pytest.mark.anyio
async def test_the_topics_cursor_stays_on_its_topic_when_the_list_is_refreshed(monkeypatch):
    """The tree is rebuilt at every answer; moving the cursor to a node not laid out yet left it on the
    first topic, so the keys that act on the selected topic (s, p, x, k) acted on another."""
    monkeypatch.setattr(tui.app, "STATUS_INTERVAL", 0.1)
    monkeypatch.setattr(tui.screens.base, "LIVE_REFRESH", 0.3)
    link = TwoTopicsLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen) and len(app.screen.topics) == 2)
        app.screen.query_one(Tree).focus()
        await pilot.press("down")
        await settle(pilot, lambda: app.screen.selected_key() == "Sysadmin")
        answers = link.answers
        await settle(pilot, lambda: link.answers >= answers + 2)
        await pilot.pause()
        assert app.screen.selected_key() == "Sysadmin"
        assert "Sysadmin" in str(app.screen.query_one("#topic-details", Static).content)


class RecoveringLink(StandInLink):
    """A node that cannot be reached until `back` is set."""

    def __init__(self) -> None:
        super().__init__(NodeError("not_found", "none", 404))
        self.back = False

    async def status(self) -> Status:
        if not self.back:
            raise NodeUnreachable("no node is running for /nonexistent")
        return await super().status()


@pytest.mark.anyio
async def test_a_problem_that_ended_on_another_screen_is_gone_when_its_screen_comes_back(monkeypatch):
    monkeypatch.setattr(tui.app, "STATUS_INTERVAL", 0.1)
    link = RecoveringLink()
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, lambda: "no node is running" in app.screen.query_one(StatusBar).problem)
        await pilot.press("1")
        link.back = True
        await settle(pilot, lambda: app.reachable and not app.screen.query_one(StatusBar).problem)
        await pilot.press("2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen))
        await pilot.pause()
        bar = app.screen.query_one(StatusBar)
        assert bar.problem == "" and bar.connected


class RefusingSearchLink(StandInLink):
    """Finds one page for any query but "(((", which it refuses as a node does a query it cannot read."""

    async def search(self, q: str, **options) -> SearchResults:
        if q == "(((":
            raise NodeError("bad_query", "the query is empty: give at least one word to look for", 400)
        return await super().search(q, **options)


@pytest.mark.anyio
async def test_a_refused_search_clears_the_previous_hits_and_says_why(monkeypatch):
    app = TopicSwarmApp(Path("/nonexistent"), link=RefusingSearchLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await search_until_hits(pilot, app, "sqlite")
        await pilot.press("slash", *["backspace"] * 6, *"(((", "enter")
        table = app.screen.query_one("#hits", DataTable)
        await settle(pilot, lambda: table.row_count == 0)
        assert table.border_title == "no search for “(((”"
        assert "give at least one word" in str(app.screen.query_one("#preview", Static).content)
        await pilot.press("slash", *["backspace"] * 3, "enter")  # nothing typed: the most confident results
        await settle(pilot, lambda: table.row_count == 1)
        assert table.border_title == "1 of 1 most confident"


@pytest.mark.anyio
async def test_refine_opens_on_its_proposals_and_escape_brings_a_drop_down_back_to_them():
    """It opened on the topic drop-down, where Down opened the menu and a/n/x did nothing."""
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await settle(pilot, lambda: isinstance(app.screen, RefineScreen))
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "proposals"
        app.screen.query_one("#refine-topic").focus()
        await pilot.press("escape")
        assert app.focused.id == "proposals"


@pytest.mark.anyio
async def test_on_an_80_by_24_terminal_help_fits_and_a_long_question_wraps():
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        await settle(pilot, lambda: bool(app.screen.query("#help")))
        help_box = app.screen.query_one("#help").region
        assert help_box.right <= 80 and help_box.bottom <= 24
        await pilot.press("escape")
        question = (
            "Block 12D3KooWAbCd…? It is refused from now on, and its models and results are removed. " * 2
        )
        app.push_screen(Prompt(question))
        await settle(pilot, lambda: isinstance(app.screen, Prompt))
        await pilot.pause()
        label = app.screen.query(Label).first().region
        assert label.height >= 2 and label.right <= 80  # it was cut to its first line


@pytest.mark.anyio
async def test_an_offline_node_with_no_peers_says_to_restart_it_networked_and_unreachable_topics_say_so():
    app = TopicSwarmApp(Path("/nonexistent"), link=StandInLink(NodeError("not_found", "none", 404)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.telemetry.status is not None)
        await pilot.press("4")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        table = app.screen.query_one("#peers", DataTable)
        await settle(pilot, lambda: "offline" in str(table.border_subtitle))
        assert "without --offline" in str(table.border_subtitle) and "--bootstrap" not in str(
            table.border_subtitle
        )
        app.reachable, app.problem = False, "no node is running for /nonexistent"
        assert app.screen.why_no_topic().startswith("the node's topics cannot be read: no node is running")


def test_a_result_offers_fetching_again_only_for_the_nodes_own_pages():
    own = Hit(4, URL, "SQLite", "Databases", 0.93, "local", ("local",), 1.9, "", "")
    pooled = replace(own, origin=PEER, origins=(PEER,))
    assert "f fetch again" in preview(own) and "f fetch again" not in preview(pooled)
    assert "not filtered yet" in preview(own)  # the default filter lists it: it is not a rejection


@pytest.mark.anyio
async def test_the_dashboard_marks_its_figures_as_last_known_while_the_node_does_not_answer(monkeypatch):
    monkeypatch.setattr(tui.app, "STATUS_INTERVAL", 0.1)
    link = RecoveringLink()
    link.back = True
    app = TopicSwarmApp(Path("/nonexistent"), link=link)
    async with app.run_test(size=SIZE) as pilot:
        summary_line = app.screen.query_one("#summary", Static)
        await settle(pilot, lambda: "pages" in str(summary_line.content))
        assert "last known" not in str(summary_line.content)
        link.back = False
        await settle(pilot, lambda: "last known, the node does not answer" in str(summary_line.content))
        link.back = True
        await settle(pilot, lambda: "last known" not in str(summary_line.content))


def test_the_dashboard_line_counts_revisits_once_there_are_any():
    crawl = {"state": "running", "active": True, "pages": 20, "activity": "crawling"}
    revisited = CrawlFigures.from_json({**crawl, "revisits": {"fetched": 3, "changed": 1, "gone": 0}})
    assert summary(revisited, None).endswith("crawled\n3 revisited, 1 changed")  # a line of its own
    assert "revisited" not in summary(CrawlFigures.from_json(crawl), None)


def test_the_dashboard_line_counts_the_hosts_down_and_their_waiting_links_once_there_are_any():
    crawl = {"state": "running", "active": True, "pages": 20, "activity": "crawling"}
    waiting = {**crawl, "hosts_waiting": {"hosts": 2, "links": 31, "next_try_in_s": 60.0}}
    assert summary(CrawlFigures.from_json(waiting), None).endswith("crawled\n2 hosts down, 31 links waiting")
    assert "down" not in summary(CrawlFigures.from_json({**crawl, "hosts_waiting": "garbled"}), None)


def test_the_dashboard_says_why_the_crawl_waits_right_under_its_headline():
    paused = {
        "state": "paused",
        "active": False,
        "pages": 20,
        "activity": "paused",
        "detail": "by the user; `topicswarm crawl start` resumes",
        "revisits": {"fetched": 1, "changed": 0, "gone": 0},
    }
    lines = summary(CrawlFigures.from_json(paused), None).splitlines()
    assert lines[0].startswith("[b]crawl paused[/b] · 20 pages")
    assert lines[1] == "[dim]by the user; `topicswarm crawl start` resumes[/dim]"
    assert lines[2] == "1 revisited, 0 changed"  # after the reason: "0 changed by the user" read as one


def test_the_dashboard_line_counts_the_requests_in_flight_while_the_crawl_runs():
    crawl = {"state": "running", "active": True, "pages": 20, "activity": "crawling", "in_flight": 3}
    assert summary(CrawlFigures.from_json(crawl), None).endswith("crawled · 3 in flight")
    idle = {**crawl, "active": False, "activity": "stopped"}
    assert "in flight" not in summary(CrawlFigures.from_json(idle), None)
    assert "in flight" not in summary(CrawlFigures.from_json({**crawl, "in_flight": "garbled"}), None)
