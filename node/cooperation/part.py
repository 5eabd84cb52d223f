"""What every part of the cooperation layer shares: the layer it belongs to, and its settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from node.cooperation.settings import CooperationSettings

if TYPE_CHECKING:
    from node.cooperation.service import Cooperation


class LayerPart:
    """A part of one node's cooperation layer (`exchange`, `meta_protocol`, `results`, `refinement`): it
    reaches the repository, the network and the other parts through the layer."""

    def __init__(self, layer: Cooperation) -> None:
        self.layer = layer

    @property
    def settings(self) -> CooperationSettings:
        return self.layer.settings
