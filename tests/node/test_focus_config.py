"""The focus loop's settings come from config.toml's [focus] section, for the node and `topicswarm crawl`."""

from __future__ import annotations

import pytest

import crawler.focus
from crawler.focus import FocusSettings
from crawler.repository import Repository
from crawler.taxonomy import FETCHED, POSITIVE, Taxonomy, TrainingDocument, store_taxonomy
from node.cli import main
from node.config import ConfigError, parse_config
from node.datadir import DataDir
from node.service import NodeService

CONFIG = '[focus]\nstrategy = "bfs"\ntunnel_depth = 1\nretrain_every = 77\n'


class Recorded(Exception):
    pass


@pytest.fixture
def recorded(monkeypatch):
    """TopicFocus replaced by a recorder of the settings it is built with (no model is trained)."""
    seen: list[FocusSettings] = []

    def record(taxonomy, settings=None, *args, **kwargs):
        seen.append(settings)
        raise ValueError("recorded")

    monkeypatch.setattr(crawler.focus, "TopicFocus", record)
    return seen


def data_with_topics(tmp_path) -> DataDir:
    data = DataDir(tmp_path / "node").ensure()
    data.config.write_text(CONFIG)
    doc = TrainingDocument(
        "Databases", POSITIVE, url="http://db.test/", text="rows and tables", status=FETCHED
    )
    repo = Repository(data.repository)
    store_taxonomy(repo, Taxonomy(("Databases",), (doc,)))
    repo.close()
    return data


def test_focus_section_is_parsed_and_a_bad_strategy_names_the_section():
    config = parse_config(CONFIG)
    assert config.focus == FocusSettings(strategy="bfs", tunnel_depth=1, retrain_every=77)
    with pytest.raises(ConfigError, match=r"\[focus\] strategy must be one of"):
        parse_config('[focus]\nstrategy = "best"\n')


def test_crawl_uses_the_configured_focus_and_strategy_overrides_it(tmp_path, recorded, capsys):
    data = data_with_topics(tmp_path)
    assert main(["crawl", "--data", str(data.root), "--quiet"]) == 2
    assert main(["crawl", "--data", str(data.root), "--quiet", "--strategy", "classifier"]) == 2
    assert "cannot train the topic model: recorded" in capsys.readouterr().err
    assert [(s.strategy, s.tunnel_depth, s.retrain_every) for s in recorded] == [
        ("bfs", 1, 77),
        ("classifier", 1, 77),
    ]


def test_node_service_builds_its_focus_loop_from_the_config(tmp_path, recorded):
    data = data_with_topics(tmp_path)
    service = NodeService(data, offline=True)  # reads config.toml
    repo = Repository(data.repository)
    try:
        policy = service.topics.focus_policy(repo)
        assert policy is None  # the recorder refuses, as an untrainable taxonomy does
    finally:
        repo.close()
    assert recorded == [FocusSettings(strategy="bfs", tunnel_depth=1, retrain_every=77)]
