"""The layout of a node's data directory: one place that names every file in it."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataDir:
    root: Path

    @property
    def config(self) -> Path:
        return self.root / "config.toml"

    @property
    def repository(self) -> Path:
        return self.root / "repository.db"

    @property
    def identity(self) -> Path:
        return self.root / "identity.key"

    @property
    def api_token(self) -> Path:
        return self.root / "api.token"

    @property
    def api_address(self) -> Path:
        """Written by a running node: where its control API listens."""
        return self.root / "api.json"

    @property
    def log(self) -> Path:
        return self.root / "node.log"

    def ensure(self) -> DataDir:
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def read_or_create_token(self) -> str:
        """The control API's bearer token, created once with mode 0600 so only the owner can read it."""
        if self.api_token.exists():
            return self.api_token.read_text().strip()
        self.ensure()
        token = secrets.token_urlsafe(32)
        fd = os.open(self.api_token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token + "\n")
        return token


def default_data_dir() -> Path:
    """`$TOPICSWARM_DATA`, else `~/.local/share/topicswarm`."""
    env = os.environ.get("TOPICSWARM_DATA")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "topicswarm"
