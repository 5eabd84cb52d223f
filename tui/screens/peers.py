"""Neighbours, the models they sent (accuracy on local data, weight in the meta-model), rejected messages;
`b` blocks the selected neighbour (after a confirmation) or unblocks a blocked one, `c` copies its address."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Static

from node.wording import counted, rename_command
from tui.records import NearbyCommunity, Peer, ReceivedModel, short_peer_id, transport_address
from tui.screens.base import NodeScreen
from tui.widgets.confirm import Confirm
from tui.widgets.status_bar import human_bytes


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


class PeersScreen(NodeScreen):
    NAME = "peers"
    LIVE = True
    AUTO_FOCUS = "#peers"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "block", "Block/unblock"),
        Binding("c", "copy_address", "Copy address"),
    ]

    def body(self) -> ComposeResult:
        yield Static(id="own-address")
        yield Static(id="nearby")
        yield DataTable(id="peers", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="models", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="rejected", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        self.rows: list[Peer] = []  # the neighbours table's peers, in its order
        peers = self.query_one("#peers", DataTable)
        peers.border_title = "neighbours"
        # the address before the shared topics: at 100 columns the last column is the one cut, and a list
        # of topics shortened ("Databases, Mathematics +1") still reads where a host and port did not
        peers.add_columns(*NEIGHBOUR_COLUMNS)
        models = self.query_one("#models", DataTable)
        models.border_title = "models"
        # accuracy here: a received model's on this node's labelled documents it did not train on, the own
        # model's by 5-fold cross-validation on them (both held-out)
        # label weight: from the accuracy on labelled documents (0 when none was left to measure it on); in
        # meta: its weight in the topic's last meta build, which also counts agreement on crawled pages
        models.add_columns(
            "topic", "from", "kind", "version", "held-out acc. here", "label weight", "in meta"
        )
        rejected = self.query_one("#rejected", DataTable)
        rejected.border_title = "rejected messages"
        rejected.add_columns("peer", "reason", "count")
        peers.focus()

    def reload(self) -> None:
        self.fetch()

    def tick(self) -> None:
        status = self.swarm.telemetry.status
        if status is not None and status.networked:  # an offline node's peers and models never change
            super().tick()

    @work(exclusive=True, group="peers")
    async def fetch(self) -> None:
        peers = await self.ask(self.link.peers)
        if peers is not None:
            self.show_peers(peers)
            self.show_nearby(self.link.nearby)
        models, refusal = await self.ask_refusable(self.link.models)
        if refusal is not None:  # offline: the table says why it stays empty
            self.query_one("#models", DataTable).border_title = f"models: none ({refusal.detail})"
            self.swarm.report_problem(refusal)
        elif models is not None:
            self.show_models(models)

    def show_peers(self, peers: list[Peer]) -> None:
        table = self.query_one("#peers", DataTable)
        rejected = self.query_one("#rejected", DataTable)
        rows, rejected_at = table.cursor_row, rejected.cursor_row
        table.clear()
        rejected.clear()
        self.rows = sorted(peers, key=lambda p: (p.blocked, p.peer_id))
        cells = [neighbour_cells(peer) for peer in self.rows]
        room = topics_room(table, cells)
        for peer, row in zip(self.rows, cells, strict=True):
            table.add_row(*row, listed(peer.shared_topics, room) if not peer.blocked else "–")
            for r in peer.rejected:
                rejected.add_row(short_peer_id(peer.peer_id), r.reason, str(r.count))
        keep_cursor(table, rows)
        keep_cursor(rejected, rejected_at)
        # an empty table with a bare title read as not loaded yet
        rejected.border_title = "rejected messages" + ("" if rejected.row_count else ": none")
        blocked = sum(peer.blocked for peer in peers)
        table.border_title = f"neighbours ({len(peers) - blocked})" + (
            f" · blocked ({blocked})" if blocked else ""
        )
        peers = [peer for peer in peers if not peer.blocked]
        own = self.show_own_address()
        hint = "no peers yet: run the node with --bootstrap MULTIADDR" + (
            ", or give a peer its address" if own else ""
        )
        status = self.swarm.telemetry.status
        if status is not None and not status.networked:  # --bootstrap goes with a node that has a network
            hint = "no peers: this node runs offline; restart it without --offline to join a community"
        table.border_subtitle = "" if peers else hint

    def on_resize(self, event: events.Resize) -> None:
        if self.rows:  # the shared topics get the columns the rest leave
            self.show_peers(self.rows)

    def selected(self) -> Peer | None:
        table = self.query_one("#peers", DataTable)
        row = table.cursor_row
        return self.rows[row] if table.row_count and 0 <= row < len(self.rows) else None

    def action_block(self) -> None:
        """Block the selected neighbour once the user confirms, or let a blocked one in again."""
        peer = self.selected()
        if peer is None:
            self.notify("no peer selected", severity="warning")
        elif peer.blocked:
            self.change_block(peer.peer_id, block=False)
        else:
            question = (
                f"Block peer {peer.peer_id}?\n\nThe node refuses it from now on, also after a restart, and "
                "removes the models and results it sent."
            )
            self.app.push_screen(
                Confirm(question, "Block"),
                lambda confirmed: self.change_block(peer.peer_id, block=True) if confirmed else None,
            )

    def action_copy_address(self) -> None:
        """The selected neighbour's whole address, as `node run --bootstrap` takes it (the table shows it
        without the peer id)."""
        peer = self.selected()
        if peer is None or not peer.addrs:
            self.notify("no address: select a neighbour the node has one for", severity="warning")
            return
        address = f"{transport_address(peer.addrs[0], peer.peer_id)}/p2p/{peer.peer_id}"
        self.app.copy_to_clipboard(address)
        self.notify(f"copied to the clipboard: {address}")

    @work(group="block")
    async def change_block(self, peer_id: str, *, block: bool) -> None:
        call = self.link.block_peer if block else self.link.unblock_peer
        answer = await self.ask(call, peer_id)
        if answer is None:
            return
        if block:
            self.notify(
                f"blocked {short_peer_id(answer['peer_id'])}: {answer['models_forgotten']} models and "
                f"{answer['results_removed']} results removed"
            )
        else:
            self.notify(f"unblocked {short_peer_id(answer['peer_id'])}")
        self.fetch()

    def show_nearby(self, nearby: list[NearbyCommunity]) -> None:
        """The communities the neighbours are in and this node is not: a folder named otherwise than a
        community's key meets nobody, and nothing else on the screen says why."""
        line = self.query_one("#nearby", Static)
        line.display = bool(nearby)
        line.update(nearby_text(nearby, self.link.data_dir))

    def show_own_address(self) -> str | None:
        """The address peers join this node through, whole on a line of its own (a border would cut it):
        nobody finds a node whose address they were not given. None when the node has none (offline)."""
        status = self.swarm.telemetry.status
        own = status.addrs[0] if status is not None and status.addrs else None
        line = self.query_one("#own-address", Static)
        line.display = own is not None
        line.update(f"this node: {own}" if own else "")
        return own

    def show_models(self, models: list[ReceivedModel]) -> None:
        table = self.query_one("#models", DataTable)
        row = table.cursor_row
        table.clear()
        for m in sorted(
            models,
            key=lambda m: (
                m.topic,
                -(m.meta_weight if m.meta_weight is not None else m.weight or 0.0),
                m.origin,
            ),
        ):
            table.add_row(
                m.topic,
                short_peer_id(m.origin),
                m.kind,
                m.version[:10],
                _accuracy_of(m),
                _fraction(m.weight),
                _fraction(m.meta_weight) if m.kind != "centroids" else "",
            )
        keep_cursor(table, row)
        received = sum(1 for m in models if m.origin != "local")
        table.border_title = f"models: {received} received, {len(models) - received} own"


NEIGHBOUR_COLUMNS = ("peer", "address", "in", "out", "rejected", "shared topics")


def nearby_text(nearby: list[NearbyCommunity], data: Path) -> str:
    """ "their communities: Science/Mathematics (1 peer, like your Mathematics), ..." and how to join one."""
    if not nearby:
        return ""
    named = [
        f"{c.key} ({counted(c.peers, 'peer')}" + (f", like your {' or '.join(c.alike)})" if c.alike else ")")
        for c in nearby
    ]
    example = next((c for c in nearby if c.alike), None)
    rename = (
        rename_command(example.alike[0], example.key, data)
        if example
        else "topicswarm topics rename KEY NEW_KEY"
    )
    return f"their communities you are not in: {', '.join(named)}. To join one, stop the node and `{rename}`"


def neighbour_cells(peer: Peer) -> tuple[str, ...]:
    """A neighbour's row but its shared topics (those get the room the others leave)."""
    if peer.blocked:
        since = time.strftime("%Y-%m-%d", time.localtime(peer.last_seen))  # no wider than an address
        return short_peer_id(peer.peer_id), f"blocked since {since}", "–", "–", "–"
    refusals = sum(r.count for r in peer.rejected)
    return (
        short_peer_id(peer.peer_id),
        transport_address(peer.addrs[0], peer.peer_id) if peer.addrs else "–",
        human_bytes(peer.bytes_in),
        human_bytes(peer.bytes_out),
        str(refusals) if refusals else "–",
    )


def topics_room(table: DataTable, cells: list[tuple[str, ...]]) -> int | None:
    """Columns left for the shared topics once the other columns have theirs (None before the table has a
    size: nothing is shortened)."""
    width = table.scrollable_content_region.width
    if not width:
        return None
    used = sum(
        max([len(header), *(len(row[i]) for row in cells)]) + 2 * table.cell_padding
        for i, header in enumerate(NEIGHBOUR_COLUMNS[:-1])
    )
    return max(width - used - 2 * table.cell_padding, len(NEIGHBOUR_COLUMNS[-1]))


def listed(names: tuple[str, ...], width: int | None) -> str:
    """Names joined by commas in `width` columns, those that do not fit counted ("Databases, Mathematics
    +1"); "–" for none."""
    for shown in range(len(names), 0, -1):
        rest = len(names) - shown
        text = ", ".join(names[:shown]) + (f" +{rest}" if rest else "")
        if width is None or len(text) <= width:
            return text
    return counted(len(names), "topic") if names else "–"


def keep_cursor(table: DataTable, row: int) -> None:
    """Put a refilled table's cursor back on the row it was on (a live reload must not move it)."""
    if table.row_count:
        table.move_cursor(row=min(max(row, 0), table.row_count - 1))


def _accuracy_of(model: ReceivedModel) -> str:
    """The accuracy with the number of documents behind it: 1.00 on one document says little."""
    if model.accuracy_local is None:
        return "–"
    return (
        f"{_fraction(model.accuracy_local)} of {model.evaluated}"
        if model.evaluated
        else _fraction(model.accuracy_local)
    )
