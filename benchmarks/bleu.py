"""BLEU-2 side by side: rexrank vs NLTK vs fast-bleu 0.0.90 (what ReXrank itself runs), in one process.

    pip install -e . nltk fast-bleu==0.0.90 && python benchmarks/bleu.py [--pairs 10000]

Each implementation scores the same synthetic report pairs from raw text (tokenisation included) the way
its users call it; the best of --repeats runs is reported, with the largest per-pair difference from ours.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from synthetic import pairs

from rexrank.scorers.bleu import Bleu2


def prep(text: str) -> list[str]:  # CXR-Report-Metric `prep_reports`, for the peers
    return [t for t in str(text).lower().replace(".", " .").split(" ") if t != ""]


def rexrank_bleu2(candidates, references):
    return Bleu2()(candidates, references)


def nltk_bleu2(candidates, references):
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smooth = SmoothingFunction().method1
    return np.array([sentence_bleu([prep(r)], prep(c), weights=(0.5, 0.5), smoothing_function=smooth)
                     for c, r in zip(candidates, references)])


def fast_bleu2(candidates, references):
    from fast_bleu import BLEU  # as CXR-Report-Metric `add_bleu_col` calls it: one BLEU object per study

    return np.array([BLEU([prep(r)], {"bigram": (1 / 2.0, 1 / 2.0)}).get_score([prep(c)])["bigram"][0]
                     for c, r in zip(candidates, references)])


def best_time(fn, candidates, references, repeats: int) -> tuple[float, np.ndarray]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn(candidates, references)
        best = min(best, time.perf_counter() - start)
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    candidates, references = pairs(args.pairs)
    ours_time, ours = best_time(rexrank_bleu2, candidates, references, args.repeats)
    print(f"BLEU-2 on {args.pairs:,} synthetic report pairs, best of {args.repeats}, "
          f"Python {platform.python_version()}, {platform.machine()}")
    print(f"{'implementation':<22} {'seconds':>8} {'pairs/s':>10} {'ours is':>9} {'max |diff|':>11}")
    print(f"{'rexrank':<22} {ours_time:8.3f} {args.pairs / ours_time:10,.0f} {'':>9} {'':>11}")
    for name, fn in (("nltk sentence_bleu", nltk_bleu2), ("fast-bleu 0.0.90", fast_bleu2)):
        try:
            seconds, scores = best_time(fn, candidates, references, args.repeats)
        except ImportError as err:
            print(f"{name:<22} not installed ({err.name})")
            continue
        diff = float(np.abs(scores - ours).max())
        print(f"{name:<22} {seconds:8.3f} {args.pairs / seconds:10,.0f} {seconds / ours_time:8.1f}x {diff:11.1e}")


if __name__ == "__main__":
    main()
