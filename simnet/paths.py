"""Where the project finds the shared real data and keeps its caches."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def shared_data_dir() -> Path:
    """`$TOPICSWARM_SHARED_DATA`, else `../shared/data` beside the project root."""
    env = os.environ.get("TOPICSWARM_SHARED_DATA")
    return Path(env) if env else PROJECT_ROOT.parent / "shared" / "data"


def cache_dir() -> Path:
    """Unpacked corpora and webs: `$TOPICSWARM_CACHE`, else `.cache/` in the project root."""
    env = os.environ.get("TOPICSWARM_CACHE")
    path = Path(env) if env else PROJECT_ROOT / ".cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


class SharedDataMissing(FileNotFoundError):
    """A corpus or web from ../shared/data is needed but absent."""


def shared_file(relative: str) -> Path:
    path = shared_data_dir() / relative
    if not path.exists():
        raise SharedDataMissing(
            f"{path} is absent: this needs the shared data folder (set TOPICSWARM_SHARED_DATA to where it is)"
        )
    return path
