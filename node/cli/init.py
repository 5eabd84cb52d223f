"""`topicswarm init`: a node's data directory, set up before its first run."""

from __future__ import annotations

import argparse

from node.cli.common import add_data_arg, data_dir
from node.config import default_config_toml
from node.datadir import write_atomically


def register(sub: argparse._SubParsersAction) -> None:
    init = sub.add_parser("init", help="create a node's data directory: config.toml, identity, API token")
    add_data_arg(init)
    init.set_defaults(func=run_init)


def run_init(args: argparse.Namespace) -> int:
    data = data_dir(args).ensure()
    created = []
    if not data.config.exists():
        write_atomically(data.config, default_config_toml())
        created.append("config.toml")
    if not data.identity.exists():
        from p2p.identity import load_or_create_identity, peer_id_of

        peer = peer_id_of(load_or_create_identity(data.identity))
        created.append(f"identity (peer id {peer})")
    if not data.api_token.exists():
        data.read_or_create_token()
        created.append("api.token")
    print(f"data directory {data.root}: " + (", ".join(f"created {c}" for c in created) or "already set up"))
    print(
        f"next: topicswarm topics import --data {data.root} bookmarks.html; "
        f"topicswarm node run --data {data.root}"
    )
    return 0
