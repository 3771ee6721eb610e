"""How many honest model outputs the judges' second layer keeps from its judge (`rexrank.llm.radiology`), per source:
real models' published outputs, read from your checkouts, never copied here.

    git clone https://github.com/MAGIC-AI4Med/ChestX-Reasoner /data/ChestX-Reasoner   # eval/res/: every model's
    git clone https://github.com/gssriram/MoERad /data/MoERad                         # results/iu_xray/preds.csv
    git clone https://github.com/aehrc/cxrmate-2 /data/cxrmate-2                      # generated_reports/*.csv
    .venv/bin/python benchmarks/judged_honest.py --chestx-reasoner /data/ChestX-Reasoner --moerad /data/MoERad \
        --cxrmate2 /data/cxrmate-2 [--show]

Each output is read as its judged metric reads it: a ChestX-Reasoner reasoning output (RadRScore's input) against
its item's reasoning steps and original report; an answer of their accuracy files (not judged by RadRScore, read as
a stricter test) without a reference; MoERad's IU-Xray reports against their ground truths (gts.csv); CXRMate-2's
findings and impression together without a reference. Prints a table of refused / read per source; `--show` prints
each refusal's reason (which quotes the sentence: for your eyes, not for a document).
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from rexrank.llm.radiology import not_radiology


def _text(pred) -> str:
    return str(pred[0] if isinstance(pred, list) and len(pred) == 1 else pred)


def chestx_reasoner(clone: Path) -> Iterator[tuple[str, str, str]]:
    """(source, output, reference) for every model's shipped outputs: reasoning files, then accuracy files."""
    for path in sorted((clone / "eval" / "res" / "reasoning_res").glob("*/*_evaluation_res.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            yield (f"ChestX-Reasoner reasoning: {path.parent.name}", _text(item["pred"]),
                   f"{item['reason_steps']} {item['original_report']}")
    for path in sorted((clone / "eval" / "res" / "accuracy_res").glob("*/*.json")):
        for item in json.loads(path.read_text(encoding="utf-8")):
            yield f"ChestX-Reasoner accuracy: {path.parent.name}", _text(item.get("pred") or ""), ""


def moerad(clone: Path) -> Iterator[tuple[str, str, str]]:
    folder = clone / "results" / "iu_xray"
    with open(folder / "gts.csv", encoding="utf-8") as gts, open(folder / "preds.csv", encoding="utf-8") as preds:
        truths = {row["study_id"]: row["report"] for row in csv.DictReader(gts)}
        for row in csv.DictReader(preds):
            yield "MoERad IU-Xray test", row["report"], truths.get(row["study_id"], "")


def cxrmate2(clone: Path) -> Iterator[tuple[str, str, str]]:
    for path in sorted((clone / "generated_reports").glob("*.csv")):
        with open(path, encoding="utf-8") as file:
            for row in csv.DictReader(file):
                text = " ".join(row.get(k) or "" for k in ("findings", "impression")).strip()
                yield f"CXRMate-2 {path.stem.removeprefix('cxrmate2_generated_reports_')}", text, ""


def count(outputs: Iterator[tuple[str, str, str]], show: bool) -> dict[str, Counter]:
    table: dict[str, Counter] = {}
    for source, text, reference in outputs:
        why = not_radiology(text, reference)
        table.setdefault(source, Counter())["refused" if why else "read"] += 1
        if why and show:
            print(f"{source}: {why}")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chestx-reasoner", type=Path, help="a checkout of MAGIC-AI4Med/ChestX-Reasoner")
    parser.add_argument("--moerad", type=Path, help="a checkout of gssriram/MoERad")
    parser.add_argument("--cxrmate2", type=Path, help="a checkout of aehrc/cxrmate-2")
    parser.add_argument("--show", action="store_true", help="print each refusal's reason")
    args = parser.parse_args()
    table = {}
    for reader, path in ((chestx_reasoner, args.chestx_reasoner), (moerad, args.moerad), (cxrmate2, args.cxrmate2)):
        if path is not None:
            table |= count(reader(path), args.show)
    print("| source | outputs | refused | read |\n|---|---:|---:|---:|")
    for source, c in table.items():
        print(f"| {source} | {c['refused'] + c['read']:,} | {c['refused']:,} | {c['read']:,} |")
    total = sum((c for c in table.values()), Counter())
    print(f"| all | {total['refused'] + total['read']:,} | {total['refused']:,} | {total['read']:,} |")


if __name__ == "__main__":
    main()
