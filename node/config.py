"""The node's configuration: `config.toml` in the data directory over the documented defaults.

Each section is a frozen settings dataclass owned by its package (`crawler.settings.CrawlSettings`, ...).
Unknown keys and wrongly typed values are errors that name the key, so a typo never silently does nothing.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from crawler.focus_settings import FocusSettings
from crawler.settings import CrawlSettings
from node.cooperation.settings import CooperationSettings
from node.settings import NodeSettings
from p2p.settings import P2PSettings


class ConfigError(ValueError):
    """The config file is unreadable or names a key or value the node does not know."""


@dataclass(frozen=True)
class Config:
    crawler: CrawlSettings = field(default_factory=CrawlSettings)
    focus: FocusSettings = field(default_factory=FocusSettings)
    node: NodeSettings = field(default_factory=NodeSettings)
    p2p: P2PSettings = field(default_factory=P2PSettings)
    cooperation: CooperationSettings = field(default_factory=CooperationSettings)


SECTIONS: dict[str, type] = {f.name: f.default_factory for f in dataclasses.fields(Config)}  # type: ignore[misc]


def _coerce(section: str, name: str, annotation: Any, value: Any) -> Any:
    hint = typing.get_origin(annotation) or annotation
    where = f"[{section}] {name}"
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, not {value!r}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be a whole number, not {value!r}")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where} must be a number, not {value!r}")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, not {value!r}")
        return value
    if hint in (tuple, list):
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{where} must be a list, not {value!r}")
        return tuple(value)
    if hint in (typing.Union, types.UnionType):
        return value
    return value


def _settings_of(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def _named_like(word: str, section: str | None = None) -> str:
    """The word with what it was probably meant to be, when one is close: a setting of this section spelt
    alike, else the same setting in another section, else a section spelt alike (section None)."""
    if section is None:
        meant = difflib.get_close_matches(word, list(SECTIONS), n=1, cutoff=0.7)
        return f"{word} ([{meant[0]}]?)" if meant else word
    meant = difflib.get_close_matches(word, sorted(_settings_of(SECTIONS[section])), n=1, cutoff=0.75)
    if meant:
        return f"{word} ({meant[0]}?)"
    elsewhere = [other for other, cls in SECTIONS.items() if other != section and word in _settings_of(cls)]
    return f"{word} (it belongs under [{elsewhere[0]}])" if elsewhere else word


def _build_section(name: str, cls: type, values: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    known = _settings_of(cls)
    unknown = sorted(set(values) - known)
    if unknown:
        named = ", ".join(_named_like(word, name) for word in unknown)
        raise ConfigError(f"[{name}] has unknown setting(s): {named}; known: {', '.join(sorted(known))}")
    try:
        return cls(**{key: _coerce(name, key, hints[key], value) for key, value in values.items()})
    except ConfigError:
        raise
    except ValueError as exc:  # a section's own checks (e.g. an unknown focus strategy)
        raise ConfigError(f"[{name}] {exc}") from exc


def parse_config(text: str, source: str = "config.toml") -> Config:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: {exc}") from exc
    unknown = sorted(set(raw) - set(SECTIONS))
    if unknown:
        named = ", ".join(_named_like(word) for word in unknown)
        raise ConfigError(f"{source}: unknown section(s) {named}; known: {', '.join(SECTIONS)}")
    sections = {}
    for name, cls in SECTIONS.items():
        values = raw.get(name, {})
        if not isinstance(values, dict):
            raise ConfigError(f"{source}: [{name}] must be a table")
        try:
            sections[name] = _build_section(name, cls, values)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from exc
    return Config(**sections)


def load_config(path: Path) -> Config:
    """The config at `path`, or the defaults when the file does not exist."""
    if not path.exists():
        return Config()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8"
        ) from exc
    return parse_config(text, source=str(path))


def replace_settings(config: Config, **sections: dict[str, Any]) -> Config:
    """`config` with some settings of some sections replaced (the demo and tests tune nodes this way)."""
    changed = {
        name: dataclasses.replace(getattr(config, name), **values) for name, values in sections.items()
    }
    return dataclasses.replace(config, **changed)


def default_config_toml() -> str:
    """Every setting under its documentation, commented out at its default. A file of values had fixed the
    defaults of the day `topicswarm init` ran: a later version's better default never reached the node,
    and nothing told a changed setting from one left alone."""
    lines: list[str] = [
        "# topicswarm node configuration: every setting, commented out at its default.",
        "# Uncomment a line to change it; one left commented follows the default of the version running.",
        "",
    ]
    for name, cls in SECTIONS.items():
        lines.append(f"[{name}]")
        for f in dataclasses.fields(cls):
            lines.append(f"# {f.metadata.get('doc', '')}")
            setting = tomli_w.dumps({f.name: _toml_value(f.default)}).strip()
            lines.extend(f"# {line}" for line in setting.splitlines())
        lines.append("")
    return "\n".join(lines)


def _toml_value(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def settings_table() -> list[tuple[str, str, str]]:
    """(key, default, doc) rows for the README's configuration table."""
    rows = []
    for name, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            default = tomli_w.dumps({"v": _toml_value(f.default)}).strip()[4:]
            rows.append((f"{name}.{f.name}", default, f.metadata.get("doc", "")))
    return rows


def settings_markdown() -> str:
    """The README's configuration table, generated so the documentation cannot drift from the code."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| setting | default | meaning |", "| --- | --- | --- |"]
    for key, default, text in settings_table():
        lines.append(f"| `{key}` | `{cell(default)}` | {cell(text)} |")
    return "\n".join(lines)
