"""A model's answers on ReXVQA scored (`rexrank score-vqa`): accuracy overall and per category with bootstrap CIs,
failed extractions by reason, one signature; a paired test between two models on the same questions.

Predictions come in ReXrank's layout (`example_files/vqa_prediction.json`: an object of records, each with
`model_prediction` beside the question, its `options` and image paths; a record's `question_id`, else its key, names
the question), or as JSONL / CSV rows `question_id,prediction`. What a prediction file says of a question (its text,
options, a `correct_answer`) is never read: the dataset's are.

Written to `--out`: `rexvqa.vqa.<model>.json` (the rows, the signature, counts) and beside it
`rexvqa.vqa.<model>.per_question.parquet` (question_id, category, prediction, answer, failure, correct).
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rexrank import stats
from rexrank.catalog import VQA_CATEGORIES
from rexrank.data.split import listing, loads
from rexrank.errors import InputError
from rexrank.files import atomic_path, write_text
from rexrank.results import model_slug
from rexrank.scorers.rexvqa_accuracy import NAME, accuracy, signature
from rexrank.vqa import TASK
from rexrank.vqa.dataset import NAME as DATASET

MAX_BYTES = 1 << 30  # a predictions file larger than this is refused before it is read
OVERALL = "overall"
TEXT_KEYS = ("model_prediction", "prediction")


def _text_of(record: dict, where: str) -> object:
    for key in TEXT_KEYS:
        if key in record:
            value = record[key]
            if value is not None and not isinstance(value, str):
                raise InputError(f"{where}: {key} is {type(value).__name__}, not text")
            return value
    raise InputError(f"{where}: no {' or '.join(TEXT_KEYS)}")


def _put(found: dict, qid: object, text: object, where: str) -> None:
    if not isinstance(qid, (str, int)) or not str(qid).strip():
        raise InputError(f"{where}: no question_id")
    key = str(qid).strip()
    if key in found:
        raise InputError(f"{where}: question {key} answered twice")
    found[key] = text


def read_predictions(path: str | os.PathLike) -> dict[str, object]:
    """question id -> the model's text, from ReXrank's JSON layout, JSONL or CSV."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such predictions file")
    if path.stat().st_size > MAX_BYTES:
        raise InputError(f"{path}: larger than {MAX_BYTES >> 20} MiB")
    data = path.read_bytes()
    found: dict[str, object] = {}
    if path.suffix.lower() == ".csv":
        try:
            rows = list(csv.DictReader(io.StringIO(data.decode("utf-8-sig"))))
        except (UnicodeDecodeError, csv.Error) as err:
            raise InputError(f"{path}: not a UTF-8 CSV ({err})") from None
        if rows and not {"question_id", "prediction"} <= set(rows[0]):
            raise InputError(f"{path}: expected the columns question_id,prediction")
        for n, row in enumerate(rows, 2):
            _put(found, row["question_id"], row["prediction"], f"{path}:{n}")
    elif path.suffix.lower() == ".jsonl":
        for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if line.strip():
                record = loads(line, f"{path}:{n}")
                if not isinstance(record, dict):
                    raise InputError(f"{path}:{n}: expected an object {{question_id, prediction}}")
                _put(found, record.get("question_id"), _text_of(record, f"{path}:{n}"), f"{path}:{n}")
    else:
        records = loads(data, str(path), "; expected ReXrank's vqa_prediction.json layout")
        items = records.items() if isinstance(records, dict) else enumerate(records) \
            if isinstance(records, list) else None
        if items is None:
            raise InputError(f"{path}: expected an object of records (ReXrank's vqa_prediction.json) or a list")
        for key, record in items:
            where = f"{path}: entry {key}"
            if not isinstance(record, dict):
                raise InputError(f"{where}: expected an object with model_prediction")
            qid = record.get("question_id", record.get("id", key if isinstance(records, dict) else None))
            _put(found, qid, _text_of(record, where), where)
    if not found:
        raise InputError(f"{path}: no predictions")
    return found


@dataclass
class VQAScores:
    rows: pd.DataFrame  # per category, then overall: questions, correct, accuracy, low, high, failed_extractions
    per_question: pd.DataFrame = field(repr=False)
    signature: str = ""
    missing: list[str] = field(default_factory=list)  # questions without a prediction (scored as empty, wrong)


def score(questions: pd.DataFrame, predictions: dict[str, object], resamples: int = stats.RESAMPLES,
          seed: int = stats.SEED, where: str = "predictions") -> VQAScores:
    """Every question of the dataset scored; a prediction for a question it does not have is an input error."""
    ids = questions["question_id"].astype(str).tolist()
    unknown = sorted(set(predictions) - set(ids))
    if unknown:
        raise InputError(f"{where}: {len(unknown)} prediction(s) for questions the dataset does not have:\n"
                         + listing([f"question {q}" for q in unknown]))
    unanswered = questions["question_id"][questions["correct_answer"].isna()].astype(str).tolist()
    if unanswered:
        raise InputError(f"the dataset has no correct answer for question {unanswered[0]}"
                         f"{f' and {len(unanswered) - 1} more' if len(unanswered) > 1 else ''}: it cannot be scored")
    missing = [q for q in ids if q not in predictions]
    outputs = [predictions.get(q) for q in ids]
    result = accuracy(outputs, questions["correct_answer"].tolist(), questions["options"].map(list).tolist(), ids)
    per_question = pd.DataFrame({"question_id": ids, "category": questions["category"].tolist(),
                                 "prediction": outputs, "answer": [r.letter for r in result.readings],
                                 "failure": [r.failure for r in result.readings], "correct": result.correct})
    groups = [(c, per_question[per_question["category"] == c]) for c in VQA_CATEGORIES]
    rows = [_row(name, group, resamples, seed) for name, group in [*groups, (OVERALL, per_question)] if len(group)]
    sig = str(signature().with_bootstrap(resamples, seed))
    return VQAScores(pd.DataFrame(rows), per_question, sig, missing)


def _row(name: str, group: pd.DataFrame, resamples: int, seed: int) -> dict:
    e = stats.estimate(group["correct"].to_numpy(dtype=np.float64), "mean", resamples, seed)
    failures = group["failure"].dropna()
    return {"category": name, "questions": len(group), "correct": int(group["correct"].sum()), "accuracy": e.value,
            "low": e.low, "high": e.high, "failed_extractions": len(failures),
            "failures": dict(sorted(failures.value_counts().to_dict().items()))}


def result_paths(out: str | os.PathLike, model: str) -> tuple[Path, Path]:
    stem = f"{DATASET}.{TASK}.{model_slug(model)}"
    return Path(out) / f"{stem}.json", Path(out) / f"{stem}.per_question.parquet"


def result_record(model: str, split: str, scores: VQAScores, per_question: str | None) -> dict:
    """What a result JSON holds (`per_question`: its table's file name, None where none is published)."""
    return {"dataset": DATASET, "split": split, "task": TASK, "model": model, "metric": NAME,
            "signature": scores.signature, "missing_predictions": len(scores.missing),
            "rows": scores.rows.to_dict("records"), "per_question": per_question}


def write_results(out: str | os.PathLike, model: str, split: str, scores: VQAScores) -> Path:
    """The result JSON (what the board and a results repo read) and its per-question table beside it."""
    path, table = result_paths(out, model)
    with atomic_path(table) as tmp:
        scores.per_question.to_parquet(tmp, index=False)
    write_text(path, json.dumps(result_record(model, split, scores, table.name), indent=2) + "\n")
    return path


def read_per_question(path: str | os.PathLike) -> pd.DataFrame:
    """A per-question table that `write_results` wrote, given it or its result JSON."""
    path = Path(path)
    if path.suffix == ".json":
        path = path.with_name(path.name.removesuffix(".json") + ".per_question.parquet")
    if not path.is_file():
        raise InputError(f"{path}: no per-question table (written by rexrank score-vqa)")
    return pd.read_parquet(path)


def paired(a: pd.DataFrame, b: pd.DataFrame, resamples: int = stats.TRIALS, seed: int = stats.SEED) -> dict:
    """Model A minus model B on the same questions, overall and per category: a paired bootstrap of accuracy."""
    if sorted(a["question_id"]) != sorted(b["question_id"]):
        only = sorted(set(a["question_id"]) ^ set(b["question_id"]))
        raise InputError(f"the two results are not on the same questions (e.g. question {only[0]})"
                         if only else "the two results repeat questions differently")
    joined = a.merge(b, on="question_id", suffixes=("_a", "_b"))
    groups = [(c, joined[joined["category_a"] == c]) for c in VQA_CATEGORIES] + [(OVERALL, joined)]
    out = {}
    for name, group in groups:
        if len(group):
            test = stats.paired_bootstrap(group["correct_a"].to_numpy(float), group["correct_b"].to_numpy(float),
                                          "mean", resamples, seed)
            out[name] = {"questions": len(group), **test.to_dict()}
    return out


def table(rows: pd.DataFrame) -> list[str]:
    lines = [f"{'category':<38} {'questions':>9} {'accuracy':>9}  95% CI              failed"]
    for _, r in rows.iterrows():
        lines.append(f"{r['category']:<38} {r['questions']:>9,} {r['accuracy']:>9.4f}  "
                     f"[{r['low']:.4f}, {r['high']:.4f}]  {r['failed_extractions']:>6,}")
    return lines
