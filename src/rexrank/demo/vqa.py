"""The demo board's VQA rows, laid out as the maintainers' VQA job commits them (`submissions/<id>/vqa/
rexvqa.vqa.<split>.json`): the two synthetic answer files of `demo/rexvqa/` scored for real on its 20 synthetic
questions (the public `test` split: accuracy with CIs and failed extractions), Demo-Careful's answers (`demo-letters`)
beside Demo-Prose's; and Demo-Careful on the private set as synthetic aggregates (no question is scored: numbers
drawn for the demo, at the board's decimals, as the job publishes a private set), so that the private view shows a
generated row among ReXrank's published ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.files import write_text
from rexrank.results import BOARD_DECIMALS
from rexrank.rules.layout import CARD, SUBMISSIONS

HERE = Path(__file__).resolve().parent / "rexvqa"
FOLDER = "vqa"
# submission -> (its card, the answers of demo/rexvqa/predictions/ it gave)
MODELS = {"demo-careful": (None, "demo-letters"),  # the code submission's card (systems.json): it serves VQA too
          "demo-prose": ({"name": "Demo-Prose", "institution": "rexrank demo", "url": "https://example.org/prose",
                          "trained_on": ["synthetic"], "access": "open-weights"}, "demo-prose")}
GENERATED = {"provenance": "generated", "checks": {"generated_by": "rexrank inference job", "demo": "synthetic"}}


def demo_vqa(root: Path, work: Path, signing_key) -> None:
    """Write the demo's VQA results into the results repo at `root` (`work`: a folder for the built questions),
    recorded in its ledger as the job records them, signed with the demo's `signing_key`."""
    from rexrank.demo import systems
    from rexrank.rules import ledger
    from rexrank.vqa.dataset import load_questions, read_rexvqa, write_rexvqa
    from rexrank.vqa.score import read_predictions, score

    built = write_rexvqa(read_rexvqa([HERE / "metadata"]), work / "rexvqa")
    questions, split = load_questions(built)
    cards = systems()
    for key, (card, answers) in MODELS.items():
        card = card or cards[key]
        folder = root / SUBMISSIONS / key
        if not (folder / CARD).is_file():
            write_text(folder / CARD, json.dumps({**card, "date": "2026-11-01"}, indent=2) + "\n")
        scores = score(questions, read_predictions(HERE / "predictions" / f"{answers}.json"), resamples=1000)
        stem = folder / FOLDER / f"rexvqa.vqa.{split}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        scores.per_question.to_parquet(stem.with_name(f"{stem.name}.per_question.parquet"), index=False)
        record = {"dataset": "rexvqa", "split": split, "task": "vqa", "model": card["name"],
                  "metric": "rexvqa_accuracy",
                  "signature": scores.signature, "missing_predictions": len(scores.missing),
                  "rows": scores.rows.to_dict("records"), "per_question": f"{stem.name}.per_question.parquet",
                  "institution": card["institution"], "url": card["url"], **GENERATED}
        write_text(stem.with_name(f"{stem.name}.json"), json.dumps(record, indent=2) + "\n")
        written = {stem.name: stem.with_name(f"{stem.name}.json").read_bytes()}
        if key == "demo-careful":
            written |= _private(folder, card)
        ledger.record_folder(root, key, owner=key, name=card["name"], institution=card["institution"],
                             files=written, pr=0, head="0" * 40, job="inference", key=signing_key)


def _private(folder: Path, card: dict) -> dict[str, bytes]:
    """Synthetic private aggregates for Demo-Careful, as the job publishes them: no count of correct answers."""
    rng, total = random.Random(47), VQA_PRIVATE["questions"]
    sizes = [total // len(VQA_CATEGORIES) + (i < total % len(VQA_CATEGORIES)) for i in range(len(VQA_CATEGORIES))]
    rows, failed = [], 0
    for name, n in [*zip(VQA_CATEGORIES, sizes), ("overall", total)]:
        value = rng.uniform(0.62, 0.78) if name != "overall" else None
        if name == "overall":
            value = sum(r["accuracy"] * r["questions"] for r in rows) / total
        half = 1.96 * (value * (1 - value) / n) ** 0.5
        misses = failed if name == "overall" else rng.randrange(0, 40)
        failed += misses if name != "overall" else 0
        rows.append({"category": name, "questions": n, "accuracy": round(value, BOARD_DECIMALS),
                     "low": round(value - half, BOARD_DECIMALS), "high": round(value + half, BOARD_DECIMALS),
                     "failed_extractions": misses})
    record = {"dataset": "rexvqa", "split": VQA_PRIVATE["split"], "task": "vqa", "model": card["name"],
              "metric": "rexvqa_accuracy", "signature": "rexvqa_accuracy:1|demo:synthetic|boot:1000:seed=0",
              "missing_predictions": 0, "rows": rows, "per_question": None, "institution": card["institution"],
              "url": card["url"], **GENERATED,
              "checks": {**GENERATED["checks"], "precision": f"{BOARD_DECIMALS} decimals"}}
    path = folder / FOLDER / f"rexvqa.vqa.{VQA_PRIVATE['split']}.json"
    write_text(path, json.dumps(record, indent=2) + "\n")
    return {path.name.removesuffix(".json"): path.read_bytes()}
