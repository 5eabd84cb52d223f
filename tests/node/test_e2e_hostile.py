"""End to end: a community of three `topicswarm node run` processes, one of them offering label-flipped
models (`[cooperation] hostile = true`). After a meta build through the real CLI on an honest node, the
hostile model has weight 0 in `/api/models` and the meta-classifier, and the meta accuracy is no worse than
that of a meta-classifier built once the hostile peer has left.
"""

from __future__ import annotations

import json

import pytest

from node.cli.demo import BOOKMARKS, map_bookmarks, stop_processes
from node.client import NodeClient
from simnet.scenarios.community import community, received_linear, seed_subset, wait_for_models
from simnet.web import serve_web_in_subprocess
from tests.waiting import cli, wait_until

PAGES = 40
TOPIC = "Databases"
pytestmark = pytest.mark.slow


def meta_accuracy(client: NodeClient, topic: str) -> float | None:
    meta = client.meta(topic)
    return next((p["accuracy"] for p in meta["curve"] if p["loss"] == meta["loss"]), None)


def test_hostile_peer_models_get_no_say_in_an_honest_meta_classifier(tmp_path):
    with serve_web_in_subprocess("fixture") as web:
        bookmarks = map_bookmarks(BOOKMARKS.read_text(), web.map_upstream)
        with community(tmp_path, 3, PAGES, hostile=1) as members:
            honest, hostile = members[0], members[2]
            assert not honest.hostile and hostile.hostile
            for member in members:
                subset = seed_subset(bookmarks, member.index, 3)
                assert member.client.import_topics(bookmarks_html=subset)["seeds"] >= 3
            wait_until(
                lambda: all(m.client.status()["crawl"]["pages"] >= PAGES for m in members), 180, "the crawls"
            )
            wait_for_models(members, [TOPIC], 90)
            hostile_id = hostile.client.status()["peer_id"]
            honest_peer = members[1].client.status()["peer_id"]

            built = cli(
                "meta", "build", "--topic", TOPIC, "--loss", "0.2", "--data", str(honest.data.root), "--json"
            )
            assert built.returncode == 0, built.stderr
            assert json.loads(built.stdout)["topic"] == TOPIC

            models = {m["origin"]: m for m in received_linear(honest.client) if m["topic"] == TOPIC}
            assert hostile_id in models and honest_peer in models
            assert models[hostile_id]["weight"] == 0.0
            assert models[honest_peer]["accuracy_local"] is None or models[honest_peer]["weight"] >= 0.0
            members_now = {m["origin"]: m["weight"] for m in honest.client.meta(TOPIC)["models"]}
            assert members_now.get(hostile_id, 0.0) == 0.0
            with_hostile = meta_accuracy(honest.client, TOPIC)

            # the same node without the hostile peer: stop it, then rebuild from the honest models alone
            stop_processes([hostile.process.process])
            wait_until(lambda: honest.client.status()["peers_online"] <= 1, 60, "the hostile node to leave")
            again = honest.client.build_meta(TOPIC, 0.2)
            assert again["peers_used"] <= 1
            without_hostile = meta_accuracy(honest.client, TOPIC)
            assert with_hostile is not None and without_hostile is not None
            assert with_hostile >= without_hostile
