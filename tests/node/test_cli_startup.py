"""Every `topicswarm` command builds the whole parser first, so what the command modules import at their
top is paid by `status`, `search` and `--help` alike. The node's learning stack (scikit-learn, the service)
belongs to the commands that use it, imported when they run."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("sklearn", "node.service", "crawler.focus", "libp2p", "textual")


def test_building_the_command_line_leaves_the_learning_stack_and_the_node_unimported():
    probe = (
        "import sys, node.cli; node.cli.build_parser(); "
        f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert loaded.stdout.split() == []
