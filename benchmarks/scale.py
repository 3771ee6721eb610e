"""The non-LLM suite at 1,000, 2,347 and 10,000 studies: peak resident memory and seconds per study.

    python benchmarks/scale.py [--sizes 1000,2347,10000] [--layers 1] [--whole 1000,2347] [--json FILE]

Every metric `rexrank score` computes without a judge (bleu2, bertscore, semb_score, radgraph, ratescore,
radcliq_v1) through `rexrank.scorecard.score`, each size in a fresh spawned process with a fresh feature cache, on
template reports (`synthetic.varied_pairs`). The encoders have their real widths, heads, vocabularies and feed-forward
sizes (768, 12, 3072) with `--layers` layers each: a feature is a hidden state, or a vector made from one, so its
size does not depend on the depth, and the memory that grows with the studies is the same as with the real models;
only the weights (constant in the studies) and the time shrink. Memory is VmHWM, the process's peak resident set;
"models loaded" is the resident set after the warm-up, before the studies. `--whole` also runs those sizes with the
whole split in one chunk, as rexrank did before it scored in chunks. The feature cache's size on disk is reported too,
and the fastest and slowest chunk's seconds (each chunk's in the JSON): time per study is flat when they do not
drift up as a run goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

import torch  # noqa: E402
from models import encoders, radgraph_archive, rate_models, scratch, timed  # noqa: E402
from suite import in_child  # noqa: E402
from synthetic import varied_pairs  # noqa: E402


def resident_mib() -> float:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) / 1024


def run(cache: Path, n: int, chunk: int | None, names: list[str] | None = None) -> dict:
    """One size in this (fresh) process: load every model, then score n studies; seconds (in all and each chunk's)
    and memory."""
    import pandas as pd

    from rexrank import scorecard
    from rexrank.scorecard import MetricSet, score
    from rexrank.scorers import AVAILABLE

    chunk_s: list[float] = []
    score_chunk = scorecard._score_chunk

    def timed_chunk(*args):  # each chunk's features and scores, timed: whether a chunk slows as a run goes on
        seconds, done = timed(lambda: score_chunk(*args))
        chunk_s.append(seconds)
        return done

    scorecard._score_chunk = timed_chunk

    os.environ["REXRANK_CACHE"] = str(cache)
    cands, refs = varied_pairs(n, seed=0)
    names = names or list(AVAILABLE)
    metrics = MetricSet(names, progress=False, chunk=chunk)  # None: rexrank's default chunk
    warmup = pd.DataFrame({"study_id": ["w"], "prediction": ["Heart size is normal."], "reference": ["No effusion."]})
    score(warmup, metrics, resamples=10)  # loads every model outside the timing
    loaded = resident_mib()
    chunk_s.clear()
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(n)], "prediction": cands, "reference": refs})
    start = time.perf_counter()
    card = score(frame, metrics)
    seconds = time.perf_counter() - start
    assert set(names) <= set(card.metrics), f"not scored: {set(names) - set(card.metrics)}"
    return {"studies": n, "chunk": metrics.chunk, "seconds": seconds, "per_study_ms": 1000 * seconds / n,
            "loaded_mib": loaded,
            "cache_mib": cache.stat().st_size / 2**20 if cache.exists() else 0.0,  # no model, no cache
            "distinct_texts": len(set(cands + refs)), "chunk_s": chunk_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2347,10000")
    parser.add_argument("--layers", type=int, default=1, help="encoder layers (real: 6 and 12)")
    parser.add_argument("--whole", default="", help="sizes also run as one chunk (the old way), e.g. 1000,2347")
    parser.add_argument("--json", help="write the numbers here, after each run")
    parser.add_argument("--metrics", help="a subset, comma-separated (default: every metric without a judge)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    work = scratch("rexrank-bench-scale-")
    texts = [t for pair in varied_pairs(max(sizes), seed=0) for t in pair]
    encoders(work, args.layers)
    radgraph_archive(work, work / "bert-base-uncased")
    rate_models(work, texts[:20_000], args.layers)
    runs = [(n, None) for n in sizes] + [(int(n), int(n)) for n in args.whole.split(",") if n]
    result = {"layers": args.layers, "threads": torch.get_num_threads(), "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d"), "runs": []}
    print(f"{'studies':>8} {'chunk':>6} {'s':>8} {'ms/study':>9} {'models MiB':>11} {'peak MiB':>9} "
          f"{'cache MiB':>10} {'chunk s':>10}", flush=True)
    for n, chunk in runs:
        names = args.metrics.split(",") if args.metrics else None
        cache = work / f"cache-{n}-{chunk or 'chunked'}.sqlite"
        row, peak = in_child(run, cache, n, chunk, names)
        for path in work.glob(cache.name + "*"):  # measured (cache_mib); the next size starts from nothing anyway
            path.unlink()
        row["peak_mib"] = peak
        result["runs"].append(row)
        spread = f"{min(row['chunk_s']):.0f}-{max(row['chunk_s']):.0f}" if row["chunk_s"] else ""
        print(f"{n:>8,} {row['chunk']:>6,} {row['seconds']:>8.1f} {row['per_study_ms']:>9.1f} "
              f"{row['loaded_mib']:>11,.0f} {peak:>9,.0f} {row['cache_mib']:>10,.0f} {spread:>10}", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
