"""The README promises what the code does: its tables are checked against the code that defines them."""

from __future__ import annotations

import re

from node.cli import build_parser
from node.config import settings_markdown
from simnet.paths import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text(encoding="utf-8")


def _between(begin: str, end: str) -> str:
    match = re.search(re.escape(begin) + r"\n(.*?)\n" + re.escape(end), README, re.S)
    assert match, f"README.md lacks the {begin} ... {end} block"
    return match.group(1).strip()


def test_quick_start_is_exactly_make_demo_and_make_test():
    block = _between("## Quick start\n\n```sh", "```")
    commands = [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


def test_configuration_table_matches_the_settings_in_code():
    assert _between("<!-- settings:begin -->", "<!-- settings:end -->") == settings_markdown()


def test_every_cli_command_is_documented():
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    missing = [name for name in commands if f"topicswarm {name}" not in README]
    assert not missing, f"README.md does not document: {missing}"
