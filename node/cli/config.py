"""`topicswarm config`: show the defaults or the effective configuration of a data directory."""

from __future__ import annotations

import argparse

from node.cli.common import CliError, add_data_arg, existing_data_dir
from node.config import ConfigError, default_config_toml, load_config, settings_markdown


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("config", help="show or check the node's configuration")
    parser.add_argument(
        "action",
        choices=["defaults", "check", "table"],
        help="defaults: every setting as commented TOML; check: validate config.toml; table: README table",
    )
    add_data_arg(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "defaults":
        print(default_config_toml())
        return 0
    if args.action == "table":
        print(settings_markdown())
        return 0
    path = existing_data_dir(args).config  # a mistyped --data is no config.toml of defaults
    try:
        load_config(path)
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    print(f"{path}: ok" if path.exists() else f"{path}: absent, defaults apply")
    return 0
