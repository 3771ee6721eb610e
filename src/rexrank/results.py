"""The result schema: one JSON per (model, dataset, task), defined here and validated on read.

A result's `provenance` says where its numbers come from. The maintainers' numbers (`COMPUTED`: every metric has
an interval, n and a signature) are *scored* (a submission's predictions re-scored by the review or private job) or
*generated* (predictions the maintainers' inference job made by running the submitted model, then scored); a result
*imported* from an official ReXrank table has values only, with the consistency check of its 1/RadCliQ-v1. A
submitter never writes a generated result: the rules accept one only as the bytes the ledger says a job wrote.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rexrank import __version__
from rexrank.errors import InputError
from rexrank.files import write_text
from rexrank.reports import TASKS
from rexrank.signature import Signature
from rexrank.stats import KNOWN, Estimate

SCHEMA_VERSION = 1
PROVENANCES = ("generated", "scored", "imported")
COMPUTED = ("generated", "scored")  # the maintainers' numbers: CIs, n and signatures
SELF_REPORTED = "scored"  # the submitter's predictions re-scored: shown, ranked only among themselves (rexrank.board)
COMPANIONS = ("per_study.parquet", "predictions.jsonl")  # the files of a result set beside its JSON
BOARD_DECIMALS = 3  # the precision the board shows (and the private set's aggregates are published at)


def model_slug(name: str) -> str:
    """A model's name as a file name carries it: letters, digits and - _ . kept, anything else a -."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "-" for ch in name.strip()) or "model"


def default_model_name(predictions: Path) -> str:
    """A model's name when none is given: its predictions file's name less a task ending (`mymodel.findings.jsonl`
    and `mymodel_findings_impression.csv` are both `mymodel`), so that one model's two tasks are one model."""
    stem = predictions.stem
    for task in sorted(TASKS, key=len, reverse=True):
        for sep in "._-":
            if stem.lower().endswith(sep + task) and len(stem) > len(task) + 1:
                return stem[: -len(task) - 1]
    return stem


def result_paths(out: Path, dataset: str, task: str, model: str) -> tuple[Path, Path, Path]:
    """Where one model's result on a dataset and task goes in an --out folder, and its per-study table and the
    predictions it scored beside it: `<out>/<dataset>.<task>.<model>.json`, `.per_study.parquet`,
    `.predictions.jsonl`. The model is in the name so that several models' results share a folder, none replacing
    another's."""
    stem = f"{dataset}.{task}.{model_slug(model)}"
    return out / f"{stem}.json", out / f"{stem}.per_study.parquet", out / f"{stem}.predictions.jsonl"


def companions(result: Path) -> tuple[Path, Path]:
    """The per-study table and predictions beside a result JSON (either naming: with the model or without)."""
    stem = result.name.removesuffix(".json")
    return result.with_name(f"{stem}.per_study.parquet"), result.with_name(f"{stem}.predictions.jsonl")


def result_name(name: str) -> tuple[str, str, str] | None:
    """(dataset, task, model as the name carries it) of a result JSON's file name: `<dataset>.<task>.<model>.json`,
    or `<dataset>.<task>.json` as rexrank before 0.2 named it (model ""); None for any other file (a shard's sidecar,
    RadRBench-CXR's accuracy)."""
    parts = name.removesuffix(".json").split(".")
    if not name.endswith(".json") or re.fullmatch(r"shard-\d+-of-\d+", parts[-1]):
        return None
    at = next((i for i, part in enumerate(parts) if i and part in TASKS), None)
    return None if at is None else (".".join(parts[:at]), parts[at], ".".join(parts[at + 1:]))


def result_files(folder: Path) -> list[Path]:
    """The result JSONs of `rexrank score --out folder`, every model's, sorted."""
    return [p for p in sorted(folder.glob("*.json")) if result_name(p.name) and p.is_file()]


def results_by_model(folder: Path) -> dict[str, list[tuple[Path, Result]]]:
    """Each model's results in an --out folder, by the name each result records, in file order."""
    models: dict[str, list[tuple[Path, Result]]] = {}
    for path in result_files(folder):
        result = Result.read(path)
        models.setdefault(result.model.name, []).append((path, result))
    return models


class ResultError(InputError):
    """A result file that does not follow the schema; the message names the file and the field."""


@dataclass(frozen=True)
class ModelInfo:
    name: str
    institution: str = ""
    url: str = ""


@dataclass(frozen=True)
class MetricResult:
    value: float | None  # the leaderboard number (mean, or 1/mean); None where a table lacks it
    mean: float | None = None  # raw mean over studies
    low: float | None = None
    high: float | None = None
    n: int | None = None
    statistic: str = "mean"
    non_positive_mean: bool = False
    signature: Signature | None = None

    @classmethod
    def from_estimate(cls, estimate: Estimate, signature: Signature) -> MetricResult:
        def finite(x: float) -> float | None:  # 1/mean of a zero mean has no number
            return x if math.isfinite(x) else None

        return cls(finite(estimate.value), estimate.mean, finite(estimate.low), finite(estimate.high), estimate.n,
                   estimate.statistic, estimate.non_positive_mean,
                   signature.with_bootstrap(estimate.resamples, estimate.seed))

    def to_dict(self) -> dict[str, Any]:
        out = {"value": self.value, "mean": self.mean, "ci": [self.low, self.high], "n": self.n,
               "statistic": self.statistic, "non_positive_mean": self.non_positive_mean}
        if self.signature:
            out["signature"] = str(self.signature)
            out["signature_detail"] = self.signature.to_dict()
        return out


@dataclass(frozen=True)
class Result:
    model: ModelInfo
    dataset: str
    split: str
    task: str
    metrics: dict[str, MetricResult]
    counts: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # metric -> why it did not run
    warnings: list[str] = field(default_factory=list)  # what the input checks noticed (empty predictions, ...)
    extras: dict[str, dict] = field(default_factory=dict)  # corpus-level numbers beside the metrics
    provenance: str = "scored"
    checks: dict[str, Any] = field(default_factory=dict)
    # The files written with this result, by name (`per_study.parquet`, `predictions.jsonl`) -> sha256: the three
    # files of a result set are one set only when these agree (a run killed between writes leaves them apart).
    companions: dict[str, str] = field(default_factory=dict)
    created: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    rexrank_version: str = __version__

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "rexrank_version": self.rexrank_version,
            "created": self.created,
            "provenance": self.provenance,
            "model": vars(self.model).copy(),
            "dataset": self.dataset,
            "split": self.split,
            "task": self.task,
            "counts": dict(self.counts),
            "metrics": {name: m.to_dict() for name, m in self.metrics.items()},
            "skipped_metrics": dict(self.skipped),
            "warnings": list(self.warnings),
            "extras": dict(self.extras),
            "checks": dict(self.checks),
            "companions": dict(self.companions),
        }

    def to_json(self) -> str:
        """The result file's text (no NaN: a number the schema cannot hold is None)."""
        return json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n"

    def write(self, path: str | os.PathLike) -> Path:
        """Write atomically: an interrupted run leaves the previous file (or none), never half of one."""
        write_text(path, self.to_json())
        return Path(path)

    @classmethod
    def read(cls, path: str | os.PathLike) -> Result:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ResultError(f"{path}: not valid JSON ({err})") from None
        except RecursionError:
            raise ResultError(f"{path}: JSON nested too deeply to read") from None
        except ValueError as err:  # an integer of more than 4,300 digits, bytes that are not UTF-8
            raise ResultError(f"{path}: not valid JSON ({str(err)[:80]})") from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str = "result") -> Result:
        check = _Checker(source)
        check.kind(data, dict, "")
        version = check.get(data, "schema_version", int)
        if version != SCHEMA_VERSION:
            raise ResultError(f"{source}: schema_version {version} is not {SCHEMA_VERSION}; "
                              "re-score or upgrade rexrank")
        provenance = check.choice(data, "provenance", PROVENANCES)
        model = check.get(data, "model", dict)
        metrics = {}
        for name, entry in check.get(data, "metrics", dict).items():
            metrics[name] = check.metric(entry, f"metrics.{name}", scored=provenance in COMPUTED)
        counts = check.get(data, "counts", dict)
        for key, value in counts.items():
            check.kind(value, int, f"counts.{key}")
        warnings = check.get(data, "warnings", list)
        for i, warning in enumerate(warnings):
            check.kind(warning, str, f"warnings[{i}]")
        return cls(
            model=ModelInfo(check.get(model, "name", str, "model.name"), model.get("institution", ""),
                            model.get("url", "")),
            dataset=check.get(data, "dataset", str),
            split=check.get(data, "split", str),
            task=check.choice(data, "task", TASKS),
            metrics=metrics,
            counts=counts,
            skipped=check.get(data, "skipped_metrics", dict),
            warnings=warnings,
            extras=check.kind(data.get("extras", {}), dict, "extras"),
            provenance=provenance,
            checks=check.get(data, "checks", dict),
            companions=check.companions(data.get("companions", {})),
            created=check.get(data, "created", str),
            rexrank_version=check.get(data, "rexrank_version", str),
        )


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str) -> ResultError:
        return ResultError(f"{self.source}: {where or 'top level'}: {message}")

    def kind(self, value: Any, kind: type | tuple[type, ...], where: str) -> Any:
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            raise self.fail(where, f"expected {names}, got {type(value).__name__} {value!r:.60}")
        return value

    def get(self, data: dict, key: str, kind: type, where: str | None = None) -> Any:
        where = where or key
        if key not in data:
            raise self.fail(where, "missing")
        return self.kind(data[key], kind, where)

    def choice(self, data: dict, key: str, options: tuple[str, ...]) -> str:
        value = self.get(data, key, str)
        if value not in options:
            raise self.fail(key, f"{value!r} is not one of {', '.join(options)}")
        return value

    def companions(self, value: Any) -> dict[str, str]:
        self.kind(value, dict, "companions")
        for name, digest in value.items():
            if name not in COMPANIONS or not (isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest)):
                raise self.fail(f"companions.{name!s:.40}", f"expected one of {', '.join(COMPANIONS)} -> a sha256")
        return dict(value)

    def number(self, data: dict, key: str, where: str, required: bool) -> float | None:
        value = data.get(key)
        if value is None and not required:
            return None
        value = self.kind(value, (int, float), f"{where}.{key}")
        if not math.isfinite(value):
            raise self.fail(f"{where}.{key}", "not a finite number")
        return float(value)

    def metric(self, entry: Any, where: str, scored: bool) -> MetricResult:
        self.kind(entry, dict, where)
        flagged = bool(entry.get("non_positive_mean", False))
        ci = entry.get("ci", [None, None])
        if not (isinstance(ci, list) and len(ci) == 2):
            raise self.fail(f"{where}.ci", "expected [low, high]")
        low, high = (self.number({"ci": c}, "ci", where, required=scored and not flagged) for c in ci)
        if low is not None and high is not None and not low <= high:
            raise self.fail(f"{where}.ci", f"low {low} > high {high}")
        statistic = entry.get("statistic", "mean")
        if statistic not in KNOWN:
            raise self.fail(f"{where}.statistic", f"{statistic!r} is not one of {', '.join(KNOWN)}")
        n = entry.get("n")
        if scored or n is not None:
            self.kind(n, int, f"{where}.n")
        signature = entry.get("signature_detail")
        if scored and not isinstance(signature, dict):
            raise self.fail(f"{where}.signature_detail", "missing: a scored number must carry its signature")
        try:
            parsed = Signature.from_dict(signature) if signature else None
        except (KeyError, TypeError, ValueError, IndexError) as err:
            raise self.fail(f"{where}.signature_detail", f"malformed ({err!r})") from None
        if parsed and entry.get("signature") != str(parsed):
            raise self.fail(f"{where}.signature", "does not match signature_detail (edited by hand?)")
        return MetricResult(
            value=self.number(entry, "value", where, required=scored and not flagged),
            mean=self.number(entry, "mean", where, required=scored),
            low=low, high=high, n=n, statistic=statistic, non_positive_mean=flagged,
            signature=parsed,
        )
