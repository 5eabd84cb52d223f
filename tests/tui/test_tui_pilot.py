"""The UI driven with Pilot against a real node (tests/tui/conftest.py): every screen, by keyboard alone."""

from __future__ import annotations

import subprocess
import sys

import pytest
from textual.command import CommandList
from textual.widgets import DataTable, Input, Select, Static, Tree

from node.cli import main
from node.client import NodeClient, NodeError, node_running
from node.datadir import DataDir
from tests.waiting import wait_until
from tui.app import TopicSwarmApp
from tui.messages import FeedbackSent, ResultsFetched
from tui.records import SearchResults
from tui.screens.dashboard import DashboardScreen
from tui.screens.help import HelpScreen
from tui.screens.meta import MetaScreen
from tui.screens.peers import PeersScreen
from tui.screens.refine import RefineScreen
from tui.screens.results import ResultsScreen
from tui.screens.topics import TopicsScreen
from tui.widgets.plots import CurvePlot
from tui.widgets.status_bar import StatusBar

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SIZE = (100, 30)


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def settle(pilot, predicate, timeout: float = 20.0) -> None:
    """Let the app work until `predicate()` holds (a hang guard, not a timing assertion)."""
    waited = 0.0
    while not predicate():
        if waited > timeout:
            problem = getattr(pilot.app, "problem", "")
            raise AssertionError(f"the UI did not get there within {timeout:.0f} s (node: {problem!r})")
        await pilot.pause(0.1)
        waited += 0.1


def recorder(messages: list):
    return lambda message: messages.append(message)


async def search(pilot, app, words: str) -> None:
    await pilot.press("3")
    await settle(pilot, lambda: isinstance(app.screen, ResultsScreen))
    await pilot.press("slash", *words, "enter")


async def searched(pilot, app, words: str, messages: list) -> SearchResults:
    """The results of searching `words` on the Results screen, as the node answered them (the screen
    lists the most confident results as it opens, before the words are typed)."""

    def answers() -> list[SearchResults]:
        return [m.results for m in messages if isinstance(m, ResultsFetched) and m.results.query == words]

    await search(pilot, app, words)
    await settle(pilot, lambda: bool(answers()))
    return answers()[0]


async def test_every_screen_is_reachable_by_keys(node_data):
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        expected = [DashboardScreen, TopicsScreen, ResultsScreen, PeersScreen, MetaScreen, RefineScreen]
        for key, screen in zip("123456", expected, strict=True):
            if isinstance(app.screen, ResultsScreen):
                await pilot.press("escape")  # leave the search box, whose keys are text
                await settle(pilot, lambda: isinstance(app.focused, DataTable))
            await pilot.press(key)
            await settle(pilot, lambda screen=screen: isinstance(app.screen, screen))
        await pilot.press("question_mark")
        await settle(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.press("escape")
        await settle(pilot, lambda: isinstance(app.screen, RefineScreen))
        await pilot.press("1")
        await settle(pilot, lambda: app.telemetry.status is not None)
        assert app.telemetry.status.local_documents >= 1


async def test_a_node_without_peers_shows_the_address_to_give_one(node_data):
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.telemetry.status is not None)
        own = app.telemetry.status.addrs[0]
        assert own.startswith("/ip4/127.0.0.1/tcp/") and own.endswith(f"/p2p/{app.telemetry.status.peer_id}")
        await pilot.press("4")
        await settle(pilot, lambda: isinstance(app.screen, PeersScreen))
        table = app.screen.query_one("#peers", DataTable)
        await settle(pilot, lambda: "no peers yet" in str(table.border_subtitle))
        assert "--bootstrap" in str(table.border_subtitle)
        assert str(app.screen.query_one("#own-address", Static).render()) == f"this node: {own}"


async def test_search_finds_a_known_page(node_data, fixture_web):
    messages: list = []
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE, message_hook=recorder(messages)) as pilot:
        results = await searched(pilot, app, "postgresql documentation", messages)
        sites = {getattr(fixture_web.site_of_url(hit.url), "name", None) for hit in results.hits}
        assert "postgresql" in sites
        assert app.screen.query_one(DataTable).row_count == len(results.hits) > 0
        await pilot.press("enter")  # the first hit's stored page, from GET /api/documents/ID
        await settle(pilot, lambda: app.screen.document_shown == results.hits[0].doc_id)
        assert results.hits[0].url in str(app.screen.query_one("#preview").content)


async def test_results_open_on_the_most_confident_and_a_topic_lists_its_own(node_data):
    messages: list = []
    app = TopicSwarmApp(node_data.root)

    def listed() -> list[SearchResults]:
        return [m.results for m in messages if isinstance(m, ResultsFetched) and m.results.browsed]

    async with app.run_test(size=SIZE, message_hook=recorder(messages)) as pilot:
        await pilot.press("3")  # nothing typed
        await settle(pilot, lambda: bool(listed()))
        table = app.screen.query_one(DataTable)
        await settle(pilot, lambda: table.row_count == len(listed()[0].hits) > 0)
        assert "most confident" in table.border_title
        assert {hit.topic for hit in listed()[0].hits} >= {"Databases", "Mathematics"}
        await pilot.press("escape", "2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen) and app.screen.topics)
        tree = app.screen.query_one(Tree)
        key = tree.cursor_node.data
        await pilot.press("v")
        await settle(pilot, lambda: isinstance(app.screen, ResultsScreen) and len(listed()) > 1)
        await settle(pilot, lambda: app.screen.query_one("#topic-filter", Select).value == key)
        assert {hit.topic for hit in listed()[-1].hits} == {key} and table.row_count > 0


async def test_words_no_page_holds_are_not_blamed_on_the_filters(node_data):
    messages: list = []
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE, message_hook=recorder(messages)) as pilot:
        results = await searched(pilot, app, "zyzzyva qoph", messages)
        assert (results.total, results.widened_total) == (0, 0)  # asked again without the verdict filter
        pane = app.screen.query_one("#preview", Static)
        await settle(pilot, lambda: "whatever the filters" in str(pane.content))


async def test_marking_a_result_reaches_the_node(node_data):
    messages: list = []
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE, message_hook=recorder(messages)) as pilot:
        hit = (await searched(pilot, app, "postgresql", messages)).hits[0]
        await pilot.press("minus")
        await settle(pilot, lambda: any(isinstance(m, FeedbackSent) for m in messages))
    with NodeClient.from_data_dir(node_data) as client:
        feedback = client.document(hit.doc_id)["feedback"]
    assert "irrelevant" in [f["kind"] for f in feedback]


async def test_fetching_a_result_again_makes_the_node_revisit_it(node_data):
    messages: list = []
    with NodeClient.from_data_dir(node_data) as client:
        before = client.status()["crawl"]["revisits"]["fetched"]
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE, message_hook=recorder(messages)) as pilot:
        hit = (await searched(pilot, app, "postgresql", messages)).hits[0]
        assert hit.is_local  # the node crawled alone
        await pilot.press("f")
        await settle(pilot, lambda: any(hit.url in n.message for n in app._notifications))
        told = [n.message for n in app._notifications if hit.url in n.message][-1]
    assert told.startswith("due for a fresh copy: the crawl fetches"), told
    with NodeClient.from_data_dir(node_data) as client:
        wait_until(lambda: client.status()["crawl"]["revisits"]["fetched"] > before, 30, "the revisit")


async def test_pausing_a_topic_and_editing_keywords_reach_the_node(node_data):
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        screen = app.screen
        await settle(pilot, lambda: bool(screen.topics))
        key = screen.query_one(Tree).cursor_node.data
        await pilot.press("p")
        await settle(pilot, lambda: screen.topics[key].crawl == "paused")
        said = [n.message for n in app._notifications]
        assert any(message.startswith(f"crawl paused for {key}") for message in said), said
        await pilot.press("k")
        await settle(pilot, lambda: isinstance(app.focused, Input))
        app.focused.value = ""
        await pilot.press(*"query, index", "enter")
        await settle(pilot, lambda: screen.topics[key].keywords == ("query", "index"))
        await pilot.press("s")
        await settle(pilot, lambda: screen.topics[key].crawl == "running")
    with NodeClient.from_data_dir(node_data) as client:
        topic = next(t for t in client.topics()["topics"] if t["key"] == key)
    assert topic["keywords"] == ["query", "index"] and topic["crawl"] == "running"


async def test_node_errors_show_in_the_status_bar_not_as_tracebacks(tmp_path):
    (tmp_path / "no-node-here").mkdir()  # a data directory no node runs for
    app = TopicSwarmApp(tmp_path / "no-node-here")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: bool(app.problem))
        bar = app.screen.query_one(StatusBar)
        assert not bar.connected and "no node is running" in bar.problem
        await pilot.press("3")
        await pilot.press("slash", *"anything", "enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, ResultsScreen)  # still running, nothing raised


def richest_topic(node_data) -> tuple[str, int]:
    """The topic holding the most of the node's own documents, and its place in the screens' topic lists."""
    with NodeClient.from_data_dir(node_data) as client:
        topics = client.topics()["topics"]
    best = max(topics, key=lambda t: t["local"])
    return best["key"], topics.index(best)


async def choose_topic(pilot, screen, select: Select, topic: str, index: int) -> None:
    """Pick the topic in the screen's topic Select with the keyboard (it opens on the current choice)."""
    await settle(pilot, lambda: screen.topic() is not None)
    select.focus()
    await pilot.press("enter", *["down"] * index, "enter")
    await settle(pilot, lambda: screen.topic() == topic)


async def test_building_a_meta_classifier_shows_it_or_the_nodes_refusal(node_data):
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        screen = app.screen
        assert isinstance(screen, MetaScreen)
        await settle(pilot, lambda: screen.topic() is not None)
        topic = screen.topic()
        await pilot.press("b")
        await settle(pilot, lambda: screen.builds_finished == 1, timeout=60)
        with NodeClient.from_data_dir(node_data) as client:
            try:
                meta = client.meta(topic)
            except NodeError as refusal:
                assert refusal.kind in app.problem
                return
        assert screen.meta is not None and (screen.meta.topic, screen.meta.kept) == (topic, meta["kept"])


async def set_loss_by_keys(pilot, screen, loss: str) -> None:
    await pilot.press("l", "ctrl+a", "ctrl+k", *loss, "enter")
    await settle(pilot, lambda: screen.meta is not None and screen.meta.loss == float(loss))


async def test_changing_the_loss_changes_the_kept_count(node_data):
    topic, index = richest_topic(node_data)
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        screen = app.screen
        assert isinstance(screen, MetaScreen)
        await choose_topic(pilot, screen, screen.query_one("#meta-topic", Select), topic, index)
        await pilot.press("b")
        await settle(pilot, lambda: screen.builds_finished == 1, timeout=60)
        assert screen.meta is not None and screen.meta.topic == topic, app.problem
        await set_loss_by_keys(pilot, screen, "0")
        kept_at_no_loss = screen.meta.kept
        await set_loss_by_keys(pilot, screen, "0.5")
        kept_at_half = screen.meta.kept
        title = screen.query_one(CurvePlot).border_title
    with NodeClient.from_data_dir(node_data) as client:
        meta = client.meta(topic)
        quality = next(t["quality"] for t in client.topics()["topics"] if t["key"] == topic)
    assert (meta["loss"], meta["kept"]) == (0.5, kept_at_half)
    assert kept_at_half < kept_at_no_loss
    # the screen shows the accuracy measured on held-out documents, and says so
    held = meta["held_out"]
    assert held["folds"] == 5 and held["documents"] > 0, held["why"]
    assert screen.meta.held_out and "held-out: 5-fold CV" in str(title)
    assert quality["measured_on"].startswith("5-fold cross-validation on")
    assert quality["accuracy"] == next(p["accuracy"] for p in held["curve"] if p["loss"] == 0.5)


async def test_the_topics_screen_shows_held_out_accuracy_the_node_measured_in_the_background(node_data):
    topic, _ = richest_topic(node_data)
    with NodeClient.from_data_dir(node_data) as client:
        try:
            client.build_meta(topic, 0.3)
        except NodeError as refusal:
            pytest.skip(f"the node built no meta-classifier here: {refusal}")
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await settle(pilot, lambda: isinstance(app.screen, TopicsScreen) and topic in app.screen.topics)
        screen = app.screen
        # nothing else asks for the curve: the screen asks again until the node has measured it
        await settle(pilot, lambda: not screen.topics[topic].measuring, timeout=60)
        shown = screen.topics[topic]
    with NodeClient.from_data_dir(node_data) as client:
        held = client.meta(topic)["held_out"]
    assert held["curve"], held["why"]
    assert shown.accuracy == next(p["accuracy"] for p in held["curve"] if p["loss"] == 0.3)
    assert shown.accuracy_on.startswith("5-fold cross-validation on")


async def test_accepting_a_cluster_proposal_adds_a_subtopic(node_data):
    topic, index = richest_topic(node_data)
    app = TopicSwarmApp(node_data.root)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        screen = app.screen
        assert isinstance(screen, RefineScreen)
        await choose_topic(pilot, screen, screen.query_one("#refine-topic", Select), topic, index)
        await pilot.press("tab", "ctrl+a", "ctrl+k", "2", "tab")  # k = 2 subtopics, then the table
        await settle(pilot, lambda: isinstance(app.focused, DataTable))
        await pilot.press("g")
        await settle(pilot, lambda: any(p.pending for p in screen.proposals), timeout=60)
        assert {p.topic for p in screen.proposals} == {topic}
        await pilot.press("n")
        await settle(pilot, lambda: isinstance(app.focused, Input))
        await pilot.press("ctrl+a", "ctrl+k", *"tuisubtopic", "enter")
        await settle(pilot, lambda: any(p.status == "accepted" for p in screen.proposals))
        said = [n.message for n in app._notifications if n.message.startswith("accepted: new subtopic")]
        assert said and "training document" in said[-1]  # what the subtopic learns from, as the CLI says
    with NodeClient.from_data_dir(node_data) as client:
        keys = [t["key"] for t in client.topics()["topics"]]
    assert f"{topic}/tuisubtopic" in keys


def highlighted_command(app) -> str:
    """The command the palette's list highlights ("" while it gathers them: Enter would pick nothing)."""
    found = app.screen.query(CommandList)
    if not found or found.first().highlighted is None:
        return ""
    commands = found.first()
    return str(commands.get_option_at_index(commands.highlighted).prompt)


async def test_stop_the_node_in_the_command_palette_stops_the_node_and_quits(tmp_path):
    """`q` leaves the node running; a node `topicswarm tui` started in the background is stopped here."""
    data = DataDir(tmp_path / "node")
    assert main(["init", "--data", str(data.root)]) == 0  # `node run` runs only on a data directory set up
    command = [sys.executable, "-m", "node.cli", "node", "run", "--data", str(data.root), "--offline"]
    node = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: node_running(data) or node.poll() is not None, 120, "node start")
        app = TopicSwarmApp(data.root)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+p", *"Stop the node")
            await settle(pilot, lambda: "Stop the node" in highlighted_command(app))
            await pilot.press("enter")
            await settle(pilot, lambda: not app.is_running)
        _, said = node.communicate(timeout=60)
    finally:
        node.kill()
        node.wait()
    assert node.returncode == 0 and "node stopped: frontier and state saved" in said
    assert not node_running(data)
