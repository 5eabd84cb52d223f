"""A simulated web served by a child process, so benchmarks measure crawlers rather than the server.

The parent (`serve_web_in_subprocess`) starts one or more workers; with several, every worker binds the same
addresses and port with SO_REUSEPORT and the kernel spreads connections over them. A worker prints one JSON
line `{"port": P}` once it listens, answers the line `log` on stdin with its request log as one JSON line, and
at the end of stdin prints its final log and exits (so a dead parent never leaves a server behind).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simnet.web.corpus import WebCorpus, load_web
from simnet.web.errors import WebError
from simnet.web.faults import FaultPlan
from simnet.web.layout import RequestRecord, WebLayout

STARTUP_TIMEOUT = 60.0


def record_to_row(record: RequestRecord) -> list:
    return [
        record.start,
        record.end,
        record.host,
        record.path,
        record.status,
        record.fault,
        record.site,
        record.bytes_sent,
    ]


def row_to_record(row: list) -> RequestRecord:
    return RequestRecord(*row)


class SubprocessWeb(WebLayout):
    """A web served by child processes: the layout of `serve_web`'s web plus the children's request log."""

    def __init__(
        self,
        corpus: WebCorpus,
        port: int,
        faults: FaultPlan,
        workers: list[subprocess.Popen],
        cross_links: int = 0,
        seed: int = 0,
        sitemaps: bool = False,
        feeds: bool = False,
    ):
        super().__init__(corpus, port, cross_links, seed)
        self.faults = faults
        self.sitemaps = sitemaps
        self.feeds = feeds
        self._workers = workers
        self._final_log: list[RequestRecord] | None = None

    def fetch_request_log(self) -> list[RequestRecord]:
        """Every worker's requests so far, ordered by start time."""
        if self._final_log is not None:
            return list(self._final_log)
        rows: list[list] = []
        for worker in self._workers:
            worker.stdin.write("log\n")
            worker.stdin.flush()
            rows += json.loads(worker.stdout.readline())
        return sorted((row_to_record(row) for row in rows), key=lambda r: r.start)

    @property
    def request_log(self) -> list[RequestRecord]:
        return self.fetch_request_log()

    def stop(self) -> None:
        """End the workers and keep their final request log."""
        rows: list[list] = []
        for worker in self._workers:
            try:
                worker.stdin.close()
                line = worker.stdout.readline()
                rows += json.loads(line) if line.strip() else []
                worker.wait(timeout=10)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                worker.kill()
                worker.wait()
            finally:
                worker.stdout.close()
        self._final_log = sorted((row_to_record(row) for row in rows), key=lambda r: r.start)


def start_worker(config: dict) -> tuple[subprocess.Popen, int]:
    worker = subprocess.Popen(
        [sys.executable, "-m", "simnet.web.worker", json.dumps(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    line = worker.stdout.readline()
    try:
        return worker, int(json.loads(line)["port"])
    except (ValueError, KeyError, TypeError):
        worker.kill()
        worker.wait()
        worker.stdin.close()
        worker.stdout.close()
        raise WebError(
            f"the web server process exited with {worker.returncode} before listening (see its stderr above)"
        ) from None


@contextmanager
def serve_web_in_subprocess(
    corpus: str | Path | WebCorpus,
    faults: FaultPlan | None = None,
    workers: int = 1,
    port: int = 0,
    cross_links: int = 0,
    seed: int = 0,
    sitemaps: bool = False,
    feeds: bool = False,
) -> Iterator[SubprocessWeb]:
    """Serve a web (a name or folder, as `load_web` takes, or a loaded corpus) from `workers` processes;
    the other options are `serve_web`'s."""
    faults = faults or FaultPlan()
    # loading here also unpacks or builds a named web once, before the workers start
    loaded = corpus if isinstance(corpus, WebCorpus) else load_web(corpus)
    name = loaded.name if loaded.name in ("fixture", "devweb", "webkb") else str(loaded.root)
    config = {
        "web": name,
        "faults": faults.to_list(),
        "port": port,
        "reuse_port": workers > 1,
        "cross_links": cross_links,
        "seed": seed,
        "sitemaps": sitemaps,
        "feeds": feeds,
    }
    started: list[subprocess.Popen] = []
    web = None
    try:
        first, chosen = start_worker(config)
        started.append(first)
        for _ in range(workers - 1):
            started.append(start_worker({**config, "port": chosen})[0])
        web = SubprocessWeb(loaded, chosen, faults, started, cross_links, seed, sitemaps, feeds)
        yield web
    finally:
        if web is not None:
            web.stop()
        else:
            for worker in started:
                worker.kill()
                worker.wait()
                worker.stdin.close()
                worker.stdout.close()
