"""A user's meta build does not queue behind the cooperation round's work in the node's one worker."""

from __future__ import annotations

import time

import pytest
import trio

from node.cooperation.testing import running_nodes

# py-libp2p 0.8.1 leaves the sockets of connections closed at host shutdown to the garbage collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

STEPS = 40


@pytest.mark.trio
async def test_no_round_step_starts_in_the_worker_while_a_meta_build_runs(tmp_path, monkeypatch):
    """A round keeps the worker busy step after step (after 150 topics' models arrived, it rebuilt every
    topic's meta-classifier, about half a second each); a build waits for the step under way, then no
    round step starts until the build has answered, and the round goes on afterwards."""
    async with running_nodes(tmp_path, 2) as (a, _b):
        with trio.fail_after(30):
            while len([m for m in await a.models("Databases") if m["role"] == "received"]) < 1:
                await trio.sleep(0.1)

        started: list[float] = []  # when each of the round's steps started in the worker
        busy = trio.Event()

        def step() -> None:
            started.append(time.monotonic())
            time.sleep(0.05)

        async def busy_round_step() -> list[str]:  # stands for the round's many meta rebuilds
            if busy.is_set():
                return []
            busy.set()
            for _ in range(STEPS):
                await a.work(step)
            return []

        monkeypatch.setattr(a, "judge_new_documents", busy_round_step)
        with trio.fail_after(30):
            await busy.wait()
            await trio.sleep(0.1)
            begun = time.monotonic()
            await a.meta_protocol.build("Databases", loss=0.2)
            answered = time.monotonic()
            while len(started) < STEPS:
                await trio.sleep(0.05)

    # (checked outside the nodes' nursery, whose exception groups would bury a failed assertion)
    assert [round(t - begun, 2) for t in started if begun < t < answered] == []
    assert len(started) == STEPS
