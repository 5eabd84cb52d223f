"""The cooperation layer (thesis 3.3): communities, model exchange, meta-classifiers, meta clustering and
pooled results. `Cooperation` is imported lazily so that `node.config` can read the settings cheaply."""

from __future__ import annotations

from typing import Any

from node.cooperation.settings import CooperationSettings

__all__ = ["Cooperation", "CooperationSettings"]


def __getattr__(name: str) -> Any:
    if name == "Cooperation":
        from node.cooperation.service import Cooperation

        return Cooperation
    raise AttributeError(name)
