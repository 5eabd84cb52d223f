"""The layout of a node's data directory: one place that names every file in it."""

from __future__ import annotations

import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DataDir:
    root: Path

    def __post_init__(self) -> None:
        # a shell leaves "~" alone in `--data=~/swarm` and `TOPICSWARM_DATA="~/swarm"`, and so does Python
        # code: unexpanded, init made a folder named "~" in the working directory and the client found no node
        object.__setattr__(self, "root", Path(self.root).expanduser())

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
    def known_peers(self) -> Path:
        """Written by a running node: its neighbour list, to rejoin through after a restart."""
        return self.root / "peers.json"

    @property
    def blocked_peers(self) -> Path:
        """The peers the user blocked (`topicswarm peers --block`), refused from the network's start."""
        return self.root / "blocked.json"

    @property
    def log(self) -> Path:
        return self.root / "node.log"

    def absence(self) -> str | None:
        """Why this is no data directory, None when it is one: a mistyped --data must say so, not that
        nothing was crawled or no node runs there."""
        if self.root.is_dir():
            return None
        return (
            f"there is no data directory {self.root}: give the --data your node uses, or make a new one "
            f"with `topicswarm init --data {self.root}`"
        )

    def not_set_up(self) -> str | None:
        """Why a node cannot run here, None when it can: no data directory, or a folder that holds none of a
        node's files (`topicswarm init` writes config.toml and the identity; a crawl, the repository). A node
        started on a mistyped --data (or on `--data ~`) ran from nothing, without topics, and filled the
        folder with a repository."""
        if (absent := self.absence()) is not None:
            return absent
        if any(path.exists() for path in (self.config, self.identity, self.repository)):
            return None
        return (
            f"{self.root} is no data directory (no config.toml, identity or repository.db): give the --data "
            f"your node uses, or set this one up with `topicswarm init --data {self.root}`"
        )

    def ensure(self) -> DataDir:
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def read_or_create_token(self) -> str:
        """The control API's bearer token, created once with mode 0600 so only the owner can read it (an
        empty file, left by a disk that filled before this write was atomic, counts as none)."""
        if self.api_token.exists():
            token = self.api_token.read_text().strip()
            if token:
                return token
        self.ensure()
        token = secrets.token_urlsafe(32)
        write_atomically(self.api_token, token + "\n", mode=0o600)
        return token


def write_atomically(path: Path, text: str, mode: int = 0o644) -> None:
    """Write `text` to `path` whole or not at all: a full disk or a kill mid-write leaves the old file (or
    none), never a truncated one. An OSError names the path (a failed write() alone does not)."""
    partial = path.with_name(path.name + ".partial")
    try:
        partial.unlink(missing_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(path)) from exc


def default_data_dir() -> Path:
    """`$TOPICSWARM_DATA`, else `~/.local/share/topicswarm`."""
    env = os.environ.get("TOPICSWARM_DATA")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "topicswarm"


def free_bytes(path: Path) -> int:
    """Free space for this user on the file system holding `path`."""
    return shutil.disk_usage(path).free
