"""A modal that asks yes or no before an action that cannot be taken back; Escape cancels."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label


class Confirm(ModalScreen[bool]):
    """Dismisses with True once confirmed (`y` or its button), False when cancelled (`n`, Escape or its
    button). The cancel button has the focus, so an Enter pressed by habit takes nothing back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Confirm"),
        Binding("n,escape", "cancel", "Cancel"),
    ]
    AUTO_FOCUS = "#confirm-no"

    def __init__(self, question: str, action: str) -> None:
        super().__init__()
        self.question = question
        self.action = action  # what the confirm button says: "Block"

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Label(self.question)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.action} (y)", variant="error", id="confirm-yes")
                yield Button("Cancel (n)", id="confirm-no")
            yield Label("y confirms · n or Escape cancels · Tab moves between the buttons", classes="hint")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "confirm-yes")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
