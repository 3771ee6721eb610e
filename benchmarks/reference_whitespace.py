"""What collapsing the references' whitespace moves, per metric (docs/metrics.md §0, "References as the board scored
them"): synthetic studies whose sections are written on lines as MIMIC-CXR's are in ReXrank's split file (each
sentence on its own line, now and then an empty one; `tests/fixtures/reports.py: multiline_studies`), predictions on
one line, each task's references scored as the file stores them and whitespace-collapsed.

    python benchmarks/reference_whitespace.py --studies 500                 # BLEU-2 only: exact, no model
    python benchmarks/reference_whitespace.py --studies 500 --tiny-models   # and every model metric, random weights

BLEU-2 needs no model, so its numbers are the metric's own. With `--tiny-models` the other metrics run on the tests'
tiny random-weight models (tests/fixtures/tiny_models.py): their numbers show whether a metric moves at all and in
which direction, never by how much the real models would. The judged metrics are not run (no judge offline): GREEN's
prompt rejoins each report's words with single spaces, so it cannot move; FineRadScore's quotes the reference as it
is, so it can, by an amount only a real judge can say.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from fixtures.reports import multiline_studies  # noqa: E402

from rexrank.reports import FINDINGS, TASKS, findings_impression_text, reference_text  # noqa: E402

MODEL_METRICS = ["bertscore", "semb_score", "radgraph", "ratescore", "radcliq_v1"]


def tiny_models(root: Path) -> None:
    """Every model pointed at a tiny random-weight copy built under `root` (what the tests' `local_models` does)."""
    from fixtures import tiny_models as tiny

    bert = tiny.build_bert_base(root / "bert-base-uncased")
    os.environ |= {
        "REXRANK_MODEL_BERTSCORE": str(tiny.build_roberta(root / "distilroberta")),
        "REXRANK_MODEL_BERT_BASE_UNCASED": str(bert),
        "REXRANK_MODEL_CHEXBERT": str(tiny.build_chexbert_checkpoint(root / "chexbert.pth", bert)),
        "REXRANK_MODEL_RADGRAPH": str(tiny.build_radgraph(root / "radgraph", bert)),
        "REXRANK_MODEL_RATE_NER": str(tiny.build_rate_ner(root / "rate-ner")),
        "REXRANK_MODEL_BIOLORD": str(tiny.build_biolord(root / "biolord")),
        "REXRANK_CACHE": "off",
    }


def stored(findings: str, impression: str | None, task: str) -> str:
    """The reference as the split file stores it (what rexrank scored before the collapse)."""
    return findings if task == FINDINGS else findings_impression_text(findings, impression)


def measure(studies: int, metrics: list[str], seed: int = 0) -> list[dict]:
    from rexrank.scorecard import MetricSet, score

    rows = multiline_studies(studies, seed)
    metric_set = MetricSet(metrics, progress=False)
    out = []
    for task in TASKS:
        frames = {how: pd.DataFrame({"study_id": [r[0] for r in rows], "prediction": [r[3] for r in rows],
                                     "reference": [make(r[1], r[2], task) for r in rows]})
                  for how, make in (("stored", stored), ("collapsed", reference_text))}
        cards = {how: score(frame, metric_set, resamples=10) for how, frame in frames.items()}
        for name in metrics:
            if name not in cards["stored"].metrics:
                out.append({"task": task, "metric": name, "skipped": cards["stored"].skipped.get(name)})
                continue
            before, after = (cards[how].per_study[name].to_numpy() for how in ("stored", "collapsed"))
            out.append({"task": task, "metric": name, "stored": cards["stored"].metrics[name].value,
                        "collapsed": cards["collapsed"].metrics[name].value,
                        "studies_changed": int((before != after).sum()), "studies": len(rows)})
    return out


def table(results: list[dict]) -> str:
    lines = ["| task | metric | references as stored | collapsed | change | studies changed |",
             "|---|---|---:|---:|---:|---:|"]
    for r in results:
        if "skipped" in r:
            lines.append(f"| {r['task']} | {r['metric']} | skipped: {r['skipped']} | | | |")
            continue
        lines.append(f"| {r['task']} | {r['metric']} | {r['stored']:.4f} | {r['collapsed']:.4f} | "
                     f"{r['collapsed'] - r['stored']:+.4f} | {r['studies_changed']:,} of {r['studies']:,} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tiny-models", action="store_true", help="also the model metrics, on random weights")
    parser.add_argument("--json", type=Path, help="write the numbers here too")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    metrics = ["bleu2"]
    with tempfile.TemporaryDirectory(prefix="rexrank-ws-") as tmp:
        if args.tiny_models:
            tiny_models(Path(tmp))
            metrics += MODEL_METRICS
        results = measure(args.studies, metrics, args.seed)
    breaks = sum("\n" in r[1] for r in multiline_studies(args.studies, args.seed))
    print(f"{args.studies:,} synthetic studies, {breaks:,} with line breaks in their findings; predictions on one line")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if all(np.isfinite(r.get("stored", 0.0)) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
