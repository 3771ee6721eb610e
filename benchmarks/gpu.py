"""Pairs per second per metric on one device: rexrank at fp32, bf16 and fp16, each precision's deviation from fp32,
and each peer package on the same pairs.

    benchmarks/gpu.sh [ours|peers]        # on a GPU machine: the wheels, then this
    python benchmarks/gpu.py [--device cuda] [--pairs 2347] [--only ours|peers] [--peer-python PATH] [--work DIR]

Models: real-size random weights at their real depth (benchmarks/models.py: distilroberta-base, bert-base with a
CheXbert checkpoint, a RadGraph archive, RaTE-NER's DeBERTa-v3 and BioLORD's MPNet), the same weights for rexrank
and the peers. rexrank: each model metric's scorer alone, no feature cache (every text computed),
the batch size its runtime fits to the free memory, model loading and one warm-up batch excluded. The deviation is
over the per-study scores: the largest |x - x_fp32| and the difference of the means.

Peers, on the same device and pairs: bert-score 0.3.13 in this process (it runs on transformers 5 for non-empty
texts, so it belongs to `--only ours`); with `--peer-python`, a Python holding the transformers-4 stack of
tests/parity/make_venv.sh, f1chexbert 0.0.2, radgraph 0.1.18 and ratescore 0.6.0, each timed inside its own
process (ratescore, which tags one sentence per forward pass, on the first `--ratescore-pairs` pairs only). The two
halves need different packages, so on the GPU machine they run apart; `--work` keeps the built models for the second.
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

import numpy as np  # noqa: E402
import torch  # noqa: E402
from fixtures.reference_venv import run_job  # noqa: E402
from models import (  # noqa: E402
    bert_score_seconds,
    encoders,
    f1chexbert_job,
    name_to_rexrank,
    radgraph_archive,
    rate_models,
    scratch,
    timed,
)
from synthetic import pairs  # noqa: E402

METRICS = ("bertscore", "semb_score", "radgraph", "ratescore")
DTYPES = ("fp32", "bf16", "fp16")


def ours(device: str, cands: list[str], refs: list[str], dtypes: list[str]) -> list[dict]:
    os.environ["REXRANK_CACHE"] = "off"
    rows, base = [], {}
    for name in METRICS:
        for dtype in dtypes:  # fp32 first: the others' deviations are from it
            seconds, scores, batch = _run(name, dtype, device, cands, refs)
            base.setdefault(name, scores)
            rows.append({"metric": name, "implementation": f"rexrank {dtype}", "seconds": seconds,
                         "pairs": len(cands), "batch": batch, "max_abs_dev": float(np.max(np.abs(scores - base[name]))),
                         "mean_dev": float(scores.mean() - base[name].mean())})
            print(_line(rows[-1]), flush=True)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    return rows


def _run(name: str, dtype: str, device: str, cands: list[str], refs: list[str]) -> tuple[float, np.ndarray, int]:
    from rexrank.scorers import SCORERS

    scorer = SCORERS[name](device=device, dtype=dtype, progress=False)
    scorer(cands[:4], refs[:4])  # loads the model and warms the kernels outside the timing
    seconds, scores = timed(lambda: scorer(cands, refs))
    return seconds, scores, _batch(scorer)


def _batch(scorer) -> int | None:
    model = getattr(scorer, "_encoder", None) or getattr(scorer, "_model", None)
    model = getattr(model, "ner", model)  # RaTEScore: its tagger's
    return getattr(model, "batch_size", None)


def bert_score_row(device: str, work: Path, models: dict, cands, refs) -> list[dict]:
    row = {"metric": "bertscore", "implementation": "bert-score 0.3.13", "pairs": len(cands),
           "seconds": bert_score_seconds(work, models["roberta"], cands, refs, device=device)}
    print(_line(row), flush=True)
    return [row]


def peers(device: str, work: Path, models: dict, python: str | None, cands, refs, subset: int) -> list[dict]:
    """The transformers-4 peers, each in its own process of `python`."""
    if not python:
        print("transformers-4 peers (f1chexbert, radgraph, ratescore) not run: no --peer-python", flush=True)
        return []
    rows = []
    answer = f1chexbert_job(python, work, models["bert"], models["checkpoint"], cands, refs, device=device)
    rows.append({"metric": "semb_score", "implementation": "f1chexbert 0.0.2 (labels only)",
                 "seconds": answer["f1chexbert_seconds"], "pairs": len(cands)})
    print(_line(rows[-1]), flush=True)
    answer = run_job(python, work, {"device": device, "radgraph": {"model": str(models["radgraph"]),
                                                                   "texts": refs + cands, "timing": True}})
    rows.append({"metric": "radgraph", "implementation": "radgraph 0.1.18", "seconds": answer["radgraph_seconds"],
                 "pairs": len(cands)})
    print(_line(rows[-1]), flush=True)
    answer = run_job(python, work, {"device": device, "ratescore": {
        "ner": str(models["ner"]), "encoder": str(models["biolord"]), "candidates": cands[:subset],
        "references": refs[:subset], "timing": True}})
    rows.append({"metric": "ratescore", "implementation": "ratescore 0.6.0", "seconds": answer["ratescore_seconds"],
                 "pairs": subset})
    print(_line(rows[-1]), flush=True)
    return rows


def _line(row: dict) -> str:
    deviation = f"{row['max_abs_dev']:10.2e} {row['mean_dev']:+10.2e}" if "max_abs_dev" in row else ""
    batch = f"{row['batch']:>6}" if row.get("batch") else " " * 6
    return (f"{row['metric']:<11} {row['implementation']:<32} {row['pairs']:>6} {row['seconds']:>8.2f} "
            f"{row['pairs'] / row['seconds']:>9.1f} {batch} {deviation}")


def built(work: Path, texts: list[str], layers: int | None) -> dict[str, Path]:
    """The models, built into `work` unless an earlier run left them there; named to rexrank either way."""
    manifest = work / "models.json"
    if manifest.is_file() and json.loads(manifest.read_text())["layers"] == layers:
        models = {k: Path(v) for k, v in json.loads(manifest.read_text())["models"].items()}
        name_to_rexrank(**models)
        return models
    roberta, bert, checkpoint = encoders(work, layers)
    ner, biolord = rate_models(work, texts, layers)
    models = {"roberta": roberta, "bert": bert, "checkpoint": checkpoint, "ner": ner, "biolord": biolord,
              "radgraph": radgraph_archive(work, bert)}
    manifest.write_text(json.dumps({"layers": layers, "models": {k: str(v) for k, v in models.items()}}))
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--pairs", type=int, default=2347)
    parser.add_argument("--layers", type=int, help="encoder layers (default: the real 6 and 12)")
    parser.add_argument("--peer-python", help="a Python with the transformers-4 peers: f1chexbert, radgraph, ratescore")
    parser.add_argument("--ratescore-pairs", type=int, default=200)
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="fp32 first (default fp32,bf16,fp16; fp16 "
                        "under autocast is slow on a CPU)")
    parser.add_argument("--only", choices=("ours", "peers"), help="rexrank's rows and bert-score's (transformers 5), "
                        "or the transformers-4 peers' (default: both)")
    parser.add_argument("--work", help="where the models are built, or were by an earlier run (default: a new folder)")
    parser.add_argument("--json", help="also write the numbers here")
    args = parser.parse_args()
    cands, refs = pairs(args.pairs, seed=0)
    work = Path(args.work) if args.work else scratch("rexrank-bench-gpu-")  # one named with --work is kept
    start = time.perf_counter()
    models = built(work, cands + refs, args.layers)
    where = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else "CPU"
    print(f"{args.pairs:,} pairs on {where}, torch {torch.__version__}; models built in "
          f"{time.perf_counter() - start:.0f} s\n{'metric':<11} {'implementation':<32} {'pairs':>6} {'seconds':>8} "
          f"{'pairs/s':>9} {'batch':>6} {'max |dev|':>10} {'mean dev':>10}", flush=True)
    rows = []
    if args.only != "peers":
        rows += ours(args.device, cands, refs, args.dtypes.split(","))
        rows += bert_score_row(args.device, work, models, cands, refs)
    if args.only != "ours":
        rows += peers(args.device, work, models, args.peer_python, cands, refs, min(args.ratescore_pairs, args.pairs))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": where, "pairs": args.pairs, "torch": torch.__version__,
                                               "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
