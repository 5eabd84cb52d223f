"""The simulated web's own maximum rate on loopback: the physical limit beside which crawler rates are read.

    python -m simnet.bench.server_rate --web fixture [--workers 1] [--clients 1] [--connections 32]

Serves the web from `--workers` child processes and drives it with `--clients` load processes, each holding
`--connections` keep-alive connections that fetch the web's pages round-robin with a minimal raw-socket HTTP
client (much cheaper per request than a crawler's). Prints one JSON line with `server_pages_per_s`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import trio

from simnet.bench.rawhttp import read_response
from simnet.web import load_web, serve_web_in_subprocess

MAX_PATHS = 5000


async def fetch_loop(
    address: tuple[str, int], host: str, paths: list[str], deadline: float, totals: dict
) -> None:
    """Fetch `paths` in turn over one keep-alive connection until the deadline."""
    sock = trio.socket.socket()
    await sock.connect(address)
    stream = trio.SocketStream(sock)
    buffer = b""
    index = 0
    async with stream:
        while time.monotonic() < deadline:
            path = paths[index % len(paths)]
            index += 1
            await stream.send_all(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
            response = await read_response(stream, buffer, chunk=262144)
            if response is None:
                return
            head, length, buffer = response
            totals["requests"] += 1
            totals["bytes"] += length
            if not head.startswith(b"HTTP/1.1 200"):
                totals["not_ok"] += 1


async def run_client(config: dict) -> dict:
    totals = {"requests": 0, "bytes": 0, "not_ok": 0}
    deadline = time.monotonic() + config["seconds"]
    targets = config["targets"]  # [[address, port, [paths...]], ...]
    async with trio.open_nursery() as nursery:
        for i in range(config["connections"]):
            address, port, paths = targets[i % len(targets)]
            nursery.start_soon(fetch_loop, (address, port), f"{address}:{port}", paths, deadline, totals)
    return totals


def client_main() -> None:
    config = json.loads(sys.stdin.read())
    print(json.dumps(trio.run(run_client, config)), flush=True)


def measure(web_name: str, workers: int, clients: int, connections: int, seconds: float) -> dict:
    corpus = load_web(web_name)
    with serve_web_in_subprocess(web_name, workers=workers) as web:
        targets = []
        for site in corpus.sites:
            files = sorted(p for p in site.root.rglob("*.html"))[:MAX_PATHS]
            paths = ["/" + str(p.relative_to(site.root)) for p in files]
            targets.append([web.addresses[site.name], web.port, paths])
        config = json.dumps({"targets": targets, "connections": connections, "seconds": seconds})
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "simnet.bench.server_rate", "--client"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            for _ in range(clients)
        ]
        results = [json.loads(proc.communicate(config)[0]) for proc in procs]
    requests = sum(r["requests"] for r in results)
    return {
        "web": web_name,
        "server_workers": workers,
        "client_processes": clients,
        "connections": connections * clients,
        "seconds": seconds,
        "requests": requests,
        "not_ok": sum(r["not_ok"] for r in results),
        "server_pages_per_s": round(requests / seconds, 1),
        "server_mb_per_s": round(sum(r["bytes"] for r in results) / seconds / 1e6, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--web", default="fixture", help="fixture, devweb, webkb or a web corpus folder")
    parser.add_argument("--workers", type=int, default=1, help="server processes sharing the port")
    parser.add_argument("--clients", type=int, default=1, help="load-generating processes")
    parser.add_argument("--connections", type=int, default=32, help="keep-alive connections per client")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.client:
        client_main()
        return 0
    print(json.dumps(measure(args.web, args.workers, args.clients, args.connections, args.seconds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
