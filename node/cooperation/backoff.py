"""How often the cooperation layer asks a peer again that had nothing for it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Backoff:
    """Rounds to skip before asking a peer again about a topic that had nothing new (doubling, capped);
    `news`: whether the last result pull brought results (or none was made yet)."""

    skip_until: int = 0
    streak: int = 0
    news: bool = True

    def idle(self, round_no: int, cap: int) -> None:
        self.streak = min(self.streak + 1, 16)
        self.skip_until = round_no + min(cap, 2 ** (self.streak - 1))

    def busy(self) -> None:
        self.skip_until = self.streak = 0

    def pulled(self, added: int | None, round_no: int, cap: int) -> None:
        """After a result pull: None (nothing new, cursor unmoved) backs off; a pull that moved the
        cursor keeps the peer asked every round, but only one that brought results counts as news (the
        next pull goes without a probe, see `ResultSync.pull`)."""
        if added is None:
            self.idle(round_no, cap)
        else:
            self.busy()
        self.news = bool(added)
