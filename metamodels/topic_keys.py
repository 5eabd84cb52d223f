"""Topic keys: "A/B/C" paths of a taxonomy, the root "". Plain strings, no learning code, so a status that
reads stored figures by topic can use them without loading scikit-learn."""

from __future__ import annotations

from collections.abc import Sequence

ROOT = ""


def topic_key(path: str | Sequence[str]) -> str:
    """The normalised key of a topic path: segments stripped, inner whitespace collapsed, joined by "/"."""
    segments = path.split("/") if isinstance(path, str) else list(path)
    return "/".join(" ".join(s.split()) for s in segments if s.strip())


def parent_of(key: str) -> str:
    return key.rpartition("/")[0]


def topic_prefixes(topic: str | None) -> list[str]:
    """'A', 'A/B', ... of a topic key 'A/B': the topic and the topics above it (none for the root)."""
    if not topic:
        return []
    parts = topic.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
