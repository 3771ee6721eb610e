"""The LLM judge client against a slow endpoint: throughput by concurrency, and what a cached rerun costs.

    pip install -e ".[dev]" && python benchmarks/judge.py [--prompts 64 --latency 2 --concurrency 1,4,16,32]

The endpoint is the tests' fake OpenAI-compatible server on loopback, answering every request after `--latency`
seconds, as a busy judge would; the client is the real `openai` package. Each concurrency level starts from an
empty cache; the last one is then rerun on its cache. "in flight" is the most requests the server saw at once.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import tempfile
import time
from pathlib import Path

import openai  # noqa: F401  (imported up front: its ~1 s import is not the judge's throughput)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fakeopenai import FakeOpenAI  # noqa: E402

from rexrank.llm import Judge  # noqa: E402


def run(fake: FakeOpenAI, prompts: list[str], concurrency: int, cache: Path) -> tuple[float, int, int, int]:
    """Seconds, requests that reached the server, the most in flight at once, failures."""
    calls_before = fake.calls
    fake.max_in_flight = 0
    judge = Judge(base_url=fake.url, model=fake.model, concurrency=concurrency, cache=cache, progress=False)
    start = time.perf_counter()
    replies = judge.complete(prompts, "bench-v1", dataset=None)
    seconds = time.perf_counter() - start
    assert judge.stats.calls == fake.calls - calls_before
    return seconds, fake.calls - calls_before, fake.max_in_flight, sum(r.error is not None for r in replies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per request at the server")
    parser.add_argument("--concurrency", default="1,4,16,32")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    prompts = [f"Findings: synthetic study {i}. No pleural effusion." for i in range(args.prompts)]
    fake = FakeOpenAI()
    fake.delay = args.latency
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for level in levels:
            cache = Path(tmp) / f"judge-{level}.sqlite"
            seconds, calls, in_flight, failures = run(fake, prompts, level, cache)
            ideal = math.ceil(args.prompts / level) * args.latency  # waves of `level` requests, zero overhead
            rows.append((f"concurrency {level}", seconds, ideal, calls, in_flight, failures))
        seconds, calls, in_flight, failures = run(fake, prompts, levels[-1], cache)
        rows.append((f"rerun, concurrency {levels[-1]}, cached", seconds, 0.0, calls, in_flight, failures))
    fake.stop()

    print(f"LLM judge client: {args.prompts} prompts, {args.latency:g} s per request at a loopback fake server, "
          f"Python {platform.python_version()}\n")
    print("| run | seconds | ideal seconds | calls | max in flight | failures | prompts/s | speed-up vs 1 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    base = rows[0][1]
    for name, seconds, ideal, calls, in_flight, failures in rows:
        speedup = f"{base / seconds:.1f}x" if calls else "no calls"
        print(f"| {name} | {seconds:.2f} | {ideal:g} | {calls} | {in_flight} | {failures} | "
              f"{args.prompts / seconds:,.1f} | {speedup} |")


if __name__ == "__main__":
    main()
