"""BLEU-4 and ROUGE-L as the papers make them (docs/metrics.md §11), held against R2Gen's own code on published outputs:
rexrank before issue 46 (R2Gen's MIMIC-CXR cleaner for every dataset, ROUGE-L's tokens the cleaned text split at
single spaces), rexrank now (the dataset's cleaner, the tokens of R2Gen's decode) and the oracle: R2Gen's own
`modules/tokenizers.py` (imported from a checkout) cleaning and round-tripping each report, `decode(tokenizer(x)[1:])`
as its trainer does, then pycocoevalcap 1.2's `Bleu(4)` and `Rouge()`. The oracle's vocabulary is every token of the
run (no <unk>, no cut: what a benchmark that scores any model's text can do); with `--iu-annotation` (R2Gen's IU-Xray
annotation.json) an IU-Xray run also shows R2Gen's whole pipeline: the vocabulary of its training reports at its
threshold 3 (rarer tokens become <unk>) and its cut at max_seq_length 60, applied to both sides.

    python benchmarks/coco_papers.py --r2gen R2GEN_CHECKOUT [--iu-annotation annotation.json] \\
        --run "MoERad IU-Xray" preds.csv gts.csv --run "CXRMate-2 MIMIC-CXR" generated.csv ReXRank_MIMICCXR_test.json

A predictions file is a CSV with `study_id` and `report` or `findings`; references a CSV with `study_id` and `report`,
or a ReXrank split JSON (its `section_findings`, the findings task). References' whitespace is collapsed as the board's
are (docs/metrics.md §0); a study without a findings section or a prediction is left out. No text is kept.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from rexrank.hf_metric import compute
from rexrank.scorecard import MetricSet, dataset_of, score
from rexrank.scorers.coco import clean_mimic_cxr, rouge_l_pair

R2GEN_NAMES = {"r2gen-iu": "iu_xray", "r2gen-mimic": "mimic_cxr"}  # our cleaner -> R2Gen's --dataset_name
MAX_SEQ_LENGTH = {"iu_xray": 60, "mimic_cxr": 100}  # R2Gen's train_*.sh / test_*.sh


def read_run(predictions: Path, references: Path) -> pd.DataFrame:
    found = pd.read_csv(predictions, dtype={"study_id": str}, keep_default_na=False)
    column = "report" if "report" in found.columns else "findings"
    made = dict(zip(found["study_id"], found[column].astype(str)))
    if references.suffix == ".json":
        records = json.loads(references.read_text(encoding="utf-8"))
        gold = {k: v.get("section_findings") for k, v in records.items()}
    else:
        table = pd.read_csv(references, dtype={"study_id": str}, keep_default_na=False)
        gold = dict(zip(table["study_id"], table["report"]))
    rows = [(k, made[k], " ".join(str(g).split())) for k, g in gold.items()
            if isinstance(g, str) and g.strip() and k in made]
    return pd.DataFrame(rows, columns=["study_id", "prediction", "reference"])


def r2gen_tokenizer(checkout: Path, texts: list[str] | None, annotation: Path | None, dataset_name: str,
                    threshold: int):
    """R2Gen's own Tokenizer, its vocabulary from `annotation`'s train reports, or from `texts` (every token kept)."""
    spec = importlib.util.spec_from_file_location("r2gen_tokenizers", checkout / "modules" / "tokenizers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with tempfile.TemporaryDirectory() as tmp:
        if annotation is None:
            annotation = Path(tmp) / "annotation.json"
            annotation.write_text(json.dumps({"train": [{"report": t} for t in texts]}))
        return module.Tokenizer(SimpleNamespace(ann_path=str(annotation), threshold=threshold,
                                                dataset_name=dataset_name))


def coco(predictions: list[str], references: list[str]) -> tuple[float, float]:
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.rouge.rouge import Rouge

    gts = {i: [r] for i, r in enumerate(references)}
    res = {i: [p] for i, p in enumerate(predictions)}
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    rouge, _ = Rouge().compute_score(gts, res)
    return bleu[3], float(rouge)


def round_trip(tokenizer, texts: list[str], cut: int | None = None) -> list[str]:
    """What R2Gen's trainer hands its metrics: `decode(ids[1:])` of the (cut) ids of each report."""
    return [tokenizer.decode(tokenizer(t)[:cut][1:]) for t in texts]


def measure(label: str, rows: pd.DataFrame, checkout: Path, iu_annotation: Path | None) -> dict:
    predictions, references = rows["prediction"].tolist(), rows["reference"].tolist()
    before_bleu = compute("bleu4", predictions, references, tokenize="r2gen-mimic", resamples=1)["bleu4"]
    before_rouge = float(np.mean([rouge_l_pair(clean_mimic_cxr(p).split(" "), clean_mimic_cxr(r).split(" "))
                                  for p, r in zip(predictions, references)]))
    card = score(rows, MetricSet(["bleu4", "rouge_l"], progress=False), resamples=1)
    cleaner = card.metrics["rouge_l"].signature.settings["tok"]
    name = R2GEN_NAMES[cleaner]
    tokenizer = r2gen_tokenizer(checkout, predictions + references, None, name, threshold=1)
    oracle = coco(round_trip(tokenizer, predictions), round_trip(tokenizer, references))
    out = {"run": label, "studies": len(rows), "dataset": dataset_of(rows, None), "tok": cleaner,
           "before": (before_bleu, before_rouge),
           "after": (card.metrics["bleu4"].value, card.metrics["rouge_l"].value), "r2gen": oracle}
    if iu_annotation is not None and name == "iu_xray":
        whole = r2gen_tokenizer(checkout, None, iu_annotation, name, threshold=3)
        cut = MAX_SEQ_LENGTH[name]
        out["r2gen_unk_cut"] = coco(round_trip(whole, predictions, cut), round_trip(whole, references, cut))
        out["r2gen_unk"] = coco(round_trip(whole, predictions), round_trip(whole, references))
    return out


def table(results: list[dict]) -> str:
    lines = ["| run | studies | cleaner now | BLEU-4 before | BLEU-4 now | BLEU-4 R2Gen | ROUGE-L before | ROUGE-L now "
             "| ROUGE-L R2Gen | now = R2Gen |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        same = "yes" if r["after"] == r["r2gen"] else f"no ({r['after'][0] - r['r2gen'][0]:+.2e}, " \
                                                     f"{r['after'][1] - r['r2gen'][1]:+.2e})"
        lines.append(f"| {r['run']} | {r['studies']:,} | {r['tok']} | {r['before'][0]:.6f} | {r['after'][0]:.6f} | "
                     f"{r['r2gen'][0]:.6f} | {r['before'][1]:.6f} | {r['after'][1]:.6f} | {r['r2gen'][1]:.6f} | "
                     f"{same} |")
    for r in results:
        if "r2gen_unk_cut" in r:
            lines.append(f"\n{r['run']}, R2Gen's whole pipeline (training vocabulary, threshold 3): BLEU-4 "
                         f"{r['r2gen_unk'][0]:.6f}, ROUGE-L {r['r2gen_unk'][1]:.6f} with <unk>; "
                         f"{r['r2gen_unk_cut'][0]:.6f}, {r['r2gen_unk_cut'][1]:.6f} with <unk> and the cut at "
                         f"{MAX_SEQ_LENGTH['iu_xray']} ids")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--r2gen", type=Path, required=True, help="a checkout of zhjohnchan/R2Gen")
    parser.add_argument("--iu-annotation", type=Path, help="R2Gen's IU-Xray annotation.json (its training reports)")
    parser.add_argument("--run", nargs=3, action="append", metavar=("LABEL", "PREDICTIONS", "REFERENCES"),
                        required=True)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = [measure(label, read_run(Path(p), Path(r)), args.r2gen, args.iu_annotation) for label, p, r in args.run]
    print(json.dumps(results, indent=1) if args.json else table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
