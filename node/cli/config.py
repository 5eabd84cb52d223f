"""`topicswarm config`: show the defaults or the effective configuration of a data directory."""

from __future__ import annotations

import argparse

from node.cli.common import CliError, add_data_arg, existing_data_dir
from node.config import ConfigError, default_config_toml, load_config, settings_markdown


def register(sub: argparse._SubParsersAction) -> None:
    """Subcommands rather than a positional choice, so `config` alone (or `config --data DIR`) is told
    which it needs as every other command group is."""
    parser = sub.add_parser("config", help="show or check the node's configuration")
    actions = parser.add_subparsers(dest="config_action", metavar="COMMAND", required=True)
    defaults = actions.add_parser("defaults", help="every setting with its default, as commented TOML")
    defaults.set_defaults(func=run_defaults)
    check = actions.add_parser("check", help="validate the data directory's config.toml")
    add_data_arg(check)
    check.set_defaults(func=run_check)
    table = actions.add_parser("table", help="every setting as the README's table")
    table.set_defaults(func=run_table)


def run_defaults(args: argparse.Namespace) -> int:
    print(default_config_toml())
    return 0


def run_table(args: argparse.Namespace) -> int:
    print(settings_markdown())
    return 0


def run_check(args: argparse.Namespace) -> int:
    path = existing_data_dir(args).config  # a mistyped --data is no config.toml of defaults
    try:
        load_config(path)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    print(f"{path}: ok" if path.exists() else f"{path}: absent, defaults apply")
    return 0
