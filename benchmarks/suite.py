"""The whole six-metric suite of `rexrank score` against the reference packages, on real-size random-weight models.

    python benchmarks/suite.py [--pairs 2347] [--reference-python .venv-reference/bin/python] [--json FILE]

One system's template reports (`synthetic.varied_pairs`, about half their sentences distinct) are scored with
every non-LLM metric (bleu2, bertscore, semb_score, radgraph, ratescore, radcliq_v1) through
`rexrank.scorecard.score`, the code behind `rexrank score`: cold (empty feature cache), then warm (a second system
against the same references, their features cached). Model loading is excluded; each metric's share is clocked
around its scorer. The roofline is each encoder's bare forward pass over the same distinct texts.

The peers run on the same pairs and threads, each in its own process, timed inside it, with its peak resident
memory: NLTK's `sentence_bleu` (method1, what our BLEU-2 parity uses; fast-bleu is 2x slower still), bert-score
0.3.13, and, in the reference venv (transformers 4), f1chexbert 0.0.2, radgraph 0.1.18 and ratescore 0.6.0.
RadCliQ is arithmetic on the four. f1chexbert gives CheXbert's labels only; CXR-Report-Metric makes SembScore's
embeddings in a second pass, so the peers' sum is a lower bound.

ratescore 0.6.0 tags one sentence per forward pass and encodes one report at a time, so its time is linear in pairs
and the whole set takes over an hour on 2 cores: it gets the first `--ratescore-pairs` pairs (default 300), and
rexrank's RaTEScore is timed on the same pairs with a fresh cache for that row's ratio; the peers' sum scales its
seconds to the whole set, and says so. Each number is printed (and written to `--json`) as soon as it is measured.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

import pandas as pd  # noqa: E402
import torch  # noqa: E402
from fixtures.reference_venv import run_job  # noqa: E402
from models import (  # noqa: E402
    bare_seconds,
    bert_score_seconds,
    encoders,
    f1chexbert_job,
    radgraph_archive,
    rate_models,
    scratch,
    timed,
)
from synthetic import varied_pairs  # noqa: E402

MODEL_METRICS = {"bertscore": "BERTScore", "semb_score": "CheXbert", "radgraph": "RadGraph", "ratescore": "RaTEScore"}
DAY = 24 * 3600


def peak_mib() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: a spawned child's ru_maxrss starts at the
    parent's resident size at fork (Linux keeps it across exec), which here holds the freshly built models."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def _with_peak(fn, *args):
    return fn(*args), peak_mib()


def in_child(fn, *args):
    """fn(*args) in a fresh process (spawned: no memory inherited): its answer and that process's peak MiB."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_with_peak, fn, *args).result()


def ours(work: Path, cands: list[str], refs: list[str], second: list[str], subset: int) -> dict:
    """`rexrank score` with every non-LLM metric, cold then warm, each metric's share, the rooflines, and RaTEScore
    alone on the first `subset` pairs (cold, its own cache)."""
    from rexrank.cache import FeatureCache
    from rexrank.scorecard import MetricSet, score
    from rexrank.scorers import AVAILABLE
    from rexrank.scorers.ratescore import RaTEScore

    os.environ["REXRANK_CACHE"] = str(work / "features.sqlite")
    metrics = MetricSet(list(AVAILABLE), progress=False)
    warmup = pd.DataFrame({"study_id": ["warm-up"], "prediction": ["Heart size is normal."],
                           "reference": ["No pleural effusion."]})
    score(warmup, metrics, resamples=10)  # loads every model outside the timing
    spent: Counter = Counter()

    def clock(name, inner):
        def clocked(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start
        return clocked

    for name, scorer in metrics.scorers.items():  # each scorer's share of the one `score` call
        for method in ("paired_features", "score"):
            setattr(scorer, method, clock(name, getattr(scorer, method)))
    frame = lambda c: pd.DataFrame({"study_id": [f"s{i}" for i in range(len(c))], "prediction": c,  # noqa: E731
                                    "reference": refs})
    out = {}
    for run, candidates in (("cold", cands), ("warm", second)):
        spent.clear()
        seconds, card = timed(lambda: score(frame(candidates), metrics))  # noqa: B023 (called at once)
        missing = set(AVAILABLE) - set(card.metrics)
        assert not missing, f"not scored: {missing}"
        out[run] = {"seconds": seconds, "metrics": dict(spent)}
        print(f"rexrank {run}: {seconds:.1f} s {json.dumps({k: round(v, 1) for k, v in spent.items()})}", flush=True)
    out["bare"] = {name: bare_seconds(name, metrics.scorers[name], cands + refs) for name in MODEL_METRICS}
    print(f"bare forward: {json.dumps({k: round(v, 1) for k, v in out['bare'].items()})}", flush=True)
    if subset >= len(cands):
        out["ratescore_subset"] = {"pairs": len(cands), "seconds": out["cold"]["metrics"]["ratescore"]}
        return out
    fresh = RaTEScore(progress=False)
    fresh.cache = FeatureCache(work / "ratescore-subset.sqlite")
    fresh.features(["Heart size is normal."])  # loads the models outside the timing
    out["ratescore_subset"] = {"pairs": subset, "seconds": timed(lambda: fresh(cands[:subset], refs[:subset]))[0]}
    print(f"rexrank RaTEScore alone, first {subset} pairs, cold: {out['ratescore_subset']['seconds']:.1f} s",
          flush=True)
    return out


def bleu_seconds(cands: list[str], refs: list[str]) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smooth = SmoothingFunction().method1
    return timed(lambda: [sentence_bleu([r.lower().split()], c.lower().split(), weights=(0.5, 0.5),
                                        smoothing_function=smooth) for c, r in zip(cands, refs)])[0]


def peers(python: str, work: Path, models: dict, cands: list[str], refs: list[str], subset: int):
    """(metric, package, seconds, peak MiB) of each reference package, one process each, as each finishes;
    ratescore on the first `subset` pairs."""
    yield "bleu2", "nltk sentence_bleu", bleu_seconds(cands, refs), None
    yield ("bertscore", "bert-score 0.3.13", *in_child(bert_score_seconds, work, models["roberta"], cands, refs))
    answer = f1chexbert_job(python, work, models["bert"], models["checkpoint"], cands, refs)
    yield "semb_score", "f1chexbert 0.0.2 (labels only)", answer["f1chexbert_seconds"], answer["max_rss_mib"]
    answer = run_job(python, work, {"radgraph": {"model": str(models["radgraph"]), "texts": refs + cands,
                                                 "timing": True}}, timeout=DAY)
    yield "radgraph", "radgraph 0.1.18", answer["radgraph_seconds"], answer["max_rss_mib"]
    answer = run_job(python, work, {"ratescore": {"ner": str(models["ner"]), "encoder": str(models["biolord"]),
                                                  "candidates": cands[:subset], "references": refs[:subset],
                                                  "timing": True}}, timeout=DAY)
    yield "ratescore", f"ratescore 0.6.0 (first {subset} pairs)", answer["ratescore_seconds"], answer["max_rss_mib"]


def table(n: int, result: dict) -> str:
    """The markdown table of benchmarks/README.md from the measured numbers."""
    mine, found = result["ours"], {metric: (seconds, peak) for metric, _, seconds, peak in result["peers"]}
    names = {metric: package for metric, package, _, _ in result["peers"]}
    subset = mine["ratescore_subset"]
    lines = ["| metric | rexrank cold s | warm s | bare forward s | cold efficiency | reference package | its s "
             "| its peak MiB | its s / rexrank cold s |", "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for metric in ("bleu2", *MODEL_METRICS):
        cold, warm = mine["cold"]["metrics"].get(metric, 0), mine["warm"]["metrics"].get(metric, 0)
        bare = mine["bare"].get(metric)
        seconds, peak = found.get(metric, (None, None))
        versus = subset["seconds"] if metric == "ratescore" and subset["pairs"] < n else cold
        lines.append(f"| {metric} | {cold:.1f} | {warm:.1f} | {f'{bare:.1f}' if bare else ''} | "
                     f"{f'{bare / cold:.0%}' if bare else ''} | {names.get(metric, 'not run')} | "
                     f"{f'{seconds:.1f}' if seconds else ''} | {f'{peak:,.0f}' if peak else ''} | "
                     f"{f'{seconds / versus:.1f}x' if seconds else ''}"
                     f"{f' (vs rexrank {versus:.1f} s on the same pairs)' if seconds and versus != cold else ''} |")
    scale = {"ratescore": n / subset["pairs"]}  # the package is linear in pairs
    total = sum(s * scale.get(m, 1) for m, (s, _) in found.items())
    bare = sum(mine["bare"].values())
    for run in ("cold", "warm"):
        seconds = mine[run]["seconds"]
        rest = seconds - sum(mine[run]["metrics"].values())
        roof = f"{bare:.1f} | {bare / seconds:.0%}" if run == "cold" else " | "
        lines.append(f"| **all six, {run}** | **{seconds:.1f}** ({n / seconds:.2f} pairs/s; CIs, RadCliQ and "
                     f"tables {rest:.1f}) | | {roof} | sum of the {len(found)} peers"
                     f"{' (ratescore scaled to all pairs)' if subset['pairs'] < n else ''} | {total:.1f} | | "
                     f"**{total / seconds:.1f}x** |")
    lines.append(f"\nPeak resident memory of the rexrank process (all six metrics' models loaded): "
                 f"{result['ours_peak_mib']:,.0f} MiB.")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2347)
    parser.add_argument("--reference-python", default=str(ROOT / ".venv-reference" / "bin" / "python"))
    parser.add_argument("--json", help="write the numbers here, after each step")
    parser.add_argument("--ratescore-pairs", type=int, default=300,
                        help="pairs given to ratescore 0.6.0 (and to rexrank's RaTEScore for that row's ratio)")
    args = parser.parse_args()
    n = args.pairs
    cands, refs = varied_pairs(n, seed=0)
    second, _ = varied_pairs(n, seed=1)  # another system's reports against the same references
    work = scratch("rexrank-bench-suite-")
    roberta, bert, checkpoint = encoders(work)
    ner, biolord = rate_models(work, cands + refs + second)
    models = {"roberta": roberta, "bert": bert, "checkpoint": checkpoint, "radgraph": radgraph_archive(work, bert),
              "ner": ner, "biolord": biolord}
    result = {"pairs": n, "distinct_texts": len(set(cands + refs)), "threads": torch.get_num_threads(),
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "peers": []}
    print(f"{n:,} pairs ({result['distinct_texts']:,} distinct texts), torch {torch.__version__}, "
          f"{result['threads']} threads", flush=True)

    def save() -> None:
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=2))

    subset = min(args.ratescore_pairs, n)
    result["ours"], result["ours_peak_mib"] = in_child(ours, work, cands, refs, second, subset)
    save()
    if not Path(args.reference_python).exists():
        sys.exit(f"no reference venv at {args.reference_python}: tests/parity/make_venv.sh builds it")
    for metric, package, seconds, peak in peers(args.reference_python, work, models, cands, refs, subset):
        print(f"{package}: {seconds:.1f} s" + (f", peak {peak:,.0f} MiB" if peak else ""), flush=True)
        result["peers"].append((metric, package, seconds, peak))
        save()
    print("\n" + table(n, result))


if __name__ == "__main__":
    main()
