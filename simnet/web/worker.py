"""One worker process of `serve_web_in_subprocess` (see simnet.web.child for the protocol on stdin/stdout)."""

from __future__ import annotations

import json
import os
import signal
import sys

import trio

from simnet.web.child import record_to_row
from simnet.web.faults import FaultPlan
from simnet.web.server import serve_web


async def run_worker(config: dict) -> None:
    faults = FaultPlan.from_list(config.get("faults", []))
    port, reuse_port = config.get("port", 0), config.get("reuse_port", False)
    cross_links, seed = config.get("cross_links", 0), config.get("seed", 0)
    sitemaps, feeds = config.get("sitemaps", False), config.get("feeds", False)
    async with serve_web(config["web"], faults, port, reuse_port, cross_links, seed, sitemaps, feeds) as web:
        print(json.dumps({"port": web.port}), flush=True)
        stdin = trio.lowlevel.FdStream(os.dup(sys.stdin.fileno()))
        buffered = b""
        async with stdin:
            while True:
                data = await stdin.receive_some(4096)
                if not data:
                    break
                buffered += data
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    if line.strip() == b"log":
                        print(json.dumps([record_to_row(r) for r in web.request_log]), flush=True)
        print(json.dumps([record_to_row(r) for r in web.request_log]), flush=True)


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent ends workers by closing their stdin
    trio.run(run_worker, json.loads(sys.argv[1]))


if __name__ == "__main__":
    main()
