"""Costs of the wire layer on realistic messages: frame sizes and milliseconds to encode, decode (with
full validation), sign and verify. Prints one JSON line.

    python -m simnet.bench.wire [--sparse-weights 20000] [--items 500]

Decoding and verifying run on the receiving node's event loop unless handed to a thread; these figures
say how much of a loop tick a model or a result page takes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from collections.abc import Callable

import numpy as np

from p2p.codec import decode_frame, encode_frame
from p2p.messages.models import ModelResponse, pack_weights
from p2p.messages.results import ResultSyncResponse
from p2p.signing import sign_model, sign_result, verify_model, verify_result
from p2p.wire_testing import sample_model, sample_result, wire_key

N_FEATURES = 2**18


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    """Best of three runs of `repeat` calls, per call: the least disturbed by other processes."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, (time.perf_counter() - start) / repeat)
    return round(best * 1e3, 3)


def model_figures(nonzero: int | None) -> dict[str, float]:
    key = wire_key(1)
    payload = sample_model(key, n_features=N_FEATURES)
    if nonzero is not None:
        matrix = np.zeros((1, N_FEATURES), np.float32)
        matrix[0, np.random.default_rng(0).choice(N_FEATURES, nonzero, replace=False)] = 1.0
        payload = dataclasses.replace(payload, **pack_weights(matrix))
    signed = sign_model(key, payload)
    message = ModelResponse(topic=payload.topic, model=signed)
    frame = encode_frame(message)
    return {
        "frame_kib": round(len(frame) / 1024, 1),
        "encode_ms": best_ms(lambda: encode_frame(message), 20),
        "decode_ms": best_ms(lambda: decode_frame(frame[4:]), 20),
        "sign_ms": best_ms(lambda: sign_model(key, payload), 20),
        "verify_ms": best_ms(lambda: verify_model(signed), 20),
    }


def result_page_figures(n_items: int = 500) -> dict[str, float]:
    key = wire_key(1)
    results = [sample_result(key, n=n) for n in range(n_items)]
    items = tuple(sign_result(key, result) for result in results)
    message = ResultSyncResponse(topic="databases", items=items, next_cursor=n_items)
    frame = encode_frame(message)
    return {
        "items": n_items,
        "frame_kib": round(len(frame) / 1024, 1),
        "decode_ms": best_ms(lambda: decode_frame(frame[4:]), 5),
        "sign_ms": best_ms(lambda: [sign_result(key, result) for result in results], 3),
        "verify_ms": best_ms(lambda: [verify_result(item) for item in items], 3),
    }


def thousands(count: int) -> str:
    """20000 as "20k" (the key the figures always had), 1500 as it is."""
    return f"{count // 1000}k" if count % 1000 == 0 else str(count)


def arguments(argv: list[str] | None) -> argparse.Namespace:
    """The bench's options, like the other benches' (`--help` ran the whole bench before printing nothing)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sparse-weights",
        type=int,
        default=20_000,
        metavar="N",
        help="nonzero weights of the sparse model (default 20000; the dense one has all 2^18)",
    )
    parser.add_argument(
        "--items", type=int, default=500, metavar="N", help="signed results in a result page (default 500)"
    )
    args = parser.parse_args(argv)
    if not 0 < args.sparse_weights <= N_FEATURES or args.items < 1:
        parser.error(f"--sparse-weights lies between 1 and {N_FEATURES}, and --items is at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    sparse = f"model_sparse_2^18_{thousands(args.sparse_weights)}"
    figures = {
        "model_dense_2^18": model_figures(None),
        sparse: model_figures(args.sparse_weights),
        "result_page": result_page_figures(args.items),
    }
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
