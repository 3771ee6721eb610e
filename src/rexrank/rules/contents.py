"""What a submission's files hold: the card, each result (against what rexrank would have written) and its
per-study table, and the predictions."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date as Date

from rexrank.catalog import ACCESS
from rexrank.errors import InputError
from rexrank.results import MetricResult, Result
from rexrank.rules.limits import (
    CARD_JSON,
    LINE_JSON,
    MAX_LINES,
    MAX_PROBLEMS_PER_FILE,
    MAX_STUDY_ID,
    RESULT_JSON,
    _Refused,
    parse_json,
)
from rexrank.scorers import METRICS, spec
from rexrank.stats import AGGREGATES
from rexrank.text import safe_url, sanitize_text
from rexrank.text import shown as _show

CARD_TEXT = {"name": 100, "institution": 200, "url": 500, "paper": 500, "code": 500, "access": 16, "date": 10,
             "contact": 200, "rexrank": 32}
CARD_LIST = {"trained_on": (32, 100)}  # field -> (items, characters per item)
CARD_FIELDS = tuple(CARD_TEXT) + tuple(CARD_LIST)


@dataclass(frozen=True)
class Card:
    """The model card stub, each text sanitised (plain text, not yet escaped for markdown or HTML)."""

    name: str
    institution: str = ""
    url: str = ""  # "" or a URL `safe_url` accepted
    paper: str = ""  # text; `paper_url` when it is a link
    code: str = ""  # "" or a URL `safe_url` accepted: the model's code
    access: str = ""  # one of ACCESS, "" unknown
    date: str = ""
    trained_on: tuple[str, ...] = ()
    contact: str = ""
    rexrank: str = ""

    @property
    def paper_url(self) -> str | None:
        return safe_url(self.paper)



def _text_field(card: dict, key: str, problems: list[str]) -> str:
    value = card.get(key, "")
    if not isinstance(value, str):
        problems.append(f"{key}: expected text, got {type(value).__name__}")
        return ""
    if len(value) > CARD_TEXT[key]:
        problems.append(f"{key}: {len(value)} characters, more than {CARD_TEXT[key]}")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in value):
        problems.append(f"{key}: control or invisible formatting characters (zero-width, right-to-left "
                        "override, newline...)")
    return sanitize_text(value, CARD_TEXT[key])


def _is_date(text: str) -> bool:
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        return False
    try:
        Date.fromisoformat(text)
    except ValueError:
        return False
    return True


def check_card(data: bytes) -> Card:
    """submission.json: a JSON object of the card's fields only, each text bounded and clean, the URL safe."""
    card = parse_json(data, CARD_JSON)
    if not isinstance(card, dict):
        raise InputError(f"expected a JSON object, got {type(card).__name__}")
    problems = [f"unknown field {_show(k, 40)!r} (fields: {', '.join(CARD_FIELDS)})" for k in card
                if k not in CARD_FIELDS]
    texts = {key: _text_field(card, key, problems) for key in CARD_TEXT}
    if "name" not in card:
        problems.append("name: missing")
    elif not texts["name"]:
        problems.append("name: empty")
    problems += [f"{key}: not an http(s) URL with a host (no credentials, spaces, quotes or brackets)"
                 for key in ("url", "code") if card.get(key) and safe_url(card[key]) is None]
    if texts["access"] and texts["access"] not in ACCESS:
        problems.append(f"access: {_show(texts['access'], 20)!r} is not one of {', '.join(ACCESS)}")
    if texts["date"] and not _is_date(texts["date"]):
        problems.append(f"date: {_show(texts['date'], 20)!r} is not YYYY-MM-DD")
    lists = {}
    for key, (max_items, max_chars) in CARD_LIST.items():
        items = card.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            problems.append(f"{key}: expected a list of text")
            items = []
        if len(items) > max_items:
            problems.append(f"{key}: {len(items)} entries, more than {max_items}")
        if any(len(i) > max_chars for i in items):
            problems.append(f"{key}: an entry longer than {max_chars} characters")
        lists[key] = tuple(t for t in (sanitize_text(i, max_chars) for i in items[:max_items]) if t)
    if problems:
        raise InputError("; ".join(problems))
    return Card(**{**texts, "url": safe_url(texts["url"]) or "", "code": safe_url(texts["code"]) or ""}, **lists)


# A generated result is the maintainers' inference job's (it ran the submitted model): never a submitter's file.
GENERATED_RESULT = ("provenance 'generated': only the maintainers' inference job writes a generated result (it runs "
                    "the submitted model), and this file is not one the ledger says it wrote; a submission carries "
                    "scored results")


def check_result(data: bytes, dataset: str, task: str, maintained: str | None = None) -> Result:
    """A result JSON: parsed with limits, `Result.from_dict` (strict), for the dataset and task its name says,
    its model text bounded and its model URL safe. `maintained`: the sha256 the ledger records for the file a
    maintainers' job wrote at this path, if any; a generated result is accepted only as exactly those bytes."""
    value = parse_json(data, RESULT_JSON)
    try:
        result = Result.from_dict(value, source="result")
    except InputError as err:
        raise InputError(_show(str(err).removeprefix("result: "), 160)) from None
    except Exception as err:  # noqa: BLE001 -- hostile input must give a message, never a crash of the checker
        raise InputError(f"malformed result ({type(err).__name__})") from None
    problems = []
    if result.provenance == "generated":
        if maintained is None or hashlib.sha256(data).hexdigest() != maintained:
            problems.append(GENERATED_RESULT)
    elif result.provenance != "scored":  # an imported row carries no CI and no signature: maintainers import them
        problems.append(f"provenance {_show(result.provenance, 20)!r}: a submission carries scored results only")
    if result.dataset != dataset or result.task != task:
        problems.append(f"holds {_show(result.dataset, 40)}.{_show(result.task, 40)}, but the file name says "
                        f"{dataset}.{task}")
    model = result.model
    for key, value, limit in (("name", model.name, 100), ("institution", model.institution, 200),
                              ("url", model.url, 500)):
        if not isinstance(value, str):
            problems.append(f"model.{key}: expected text, got {type(value).__name__}")
        elif len(value) > limit:
            problems.append(f"model.{key}: {len(value)} characters, more than {limit}")
    if isinstance(model.url, str) and model.url and safe_url(model.url) is None:
        problems.append("model.url: not an http(s) URL with a host (no credentials, spaces, quotes or brackets)")
    problems += [f"counts.{_show(k, 40)}: {v} is negative" for k, v in result.counts.items() if v < 0]
    if not result.metrics:
        problems.append("metrics: none")
    for name, metric in result.metrics.items():
        problems += metric_problems(name, metric, result.counts.get("scored"))
    if problems:
        raise InputError("; ".join(problems[:MAX_PROBLEMS_PER_FILE]))
    return result


# Slack on a metric's bounds: a cosine of float32 vectors may pass 1 by a few float32 ulps (about 1e-7 each).
BOUND_SLACK = 1e-6
# Slack between a stated mean and its recomputation from the per-study column, or between value and mean: float64
# sums of at most MAX_ROWS values of magnitude under 13 (BERTScore's floor is about -12.1) differ by at most
# MAX_ROWS x 2^-53 x 13, about 1.4e-10, whatever order they are added in.
MEAN_SLACK = 1e-9


def metric_problems(name: str, metric: MetricResult, scored: int | None) -> list[str]:
    """One metric of a submitted result against what rexrank would have written: a known name, this rexrank's
    version of it and of its components, its statistic, n, the value from its mean, the value inside its CI, and
    mean and CI inside the metric's range."""
    where = f"metrics.{_show(name, 40)}"
    if name not in METRICS:
        return [f"{where}: unknown metric (known: {', '.join(METRICS)})"]
    kind, sig = spec(name), metric.signature
    problems = []
    if sig is None or sig.metric != name:
        problems.append(f"{where}: its signature is not {name}'s")
    else:
        for part in (sig, *sig.components):
            current = spec(part.metric).version if part.metric in METRICS else None
            if part.version != current:
                problems.append(f"{where}: made by {_show(part.metric, 40)} version {_show(part.version, 20)}, this "
                                f"rexrank's is {current or 'none'}: re-score")
    if metric.statistic != kind.statistic:
        problems.append(f"{where}: statistic {metric.statistic}, {name}'s is {kind.statistic}")
    if metric.n is None or metric.n < 1 or (scored is not None and metric.n > scored):
        problems.append(f"{where}: n {metric.n} is not from 1 to the {scored} studies scored")
    low, high = kind.bounds
    mean, value = metric.mean, metric.value
    if mean is not None and not low - BOUND_SLACK <= mean <= high + BOUND_SLACK:
        problems.append(f"{where}: mean {mean} is outside [{low}, {high}], the range of {name}")
    if kind.statistic in ("mean", *AGGREGATES):  # an aggregate's mean is its value (it has no per-study mean)
        if value is None or mean is None or abs(value - mean) > MEAN_SLACK:
            problems.append(f"{where}: value {value} is not its mean {mean}")
        elif metric.low is not None and metric.high is not None and not (
                low - BOUND_SLACK <= metric.low and metric.high <= high + BOUND_SLACK):
            problems.append(f"{where}: CI [{metric.low}, {metric.high}] is outside [{low}, {high}], the range of "
                            f"{name}")
    elif not metric.non_positive_mean:
        if mean is None or mean <= 0 or value is None or abs(value - 1 / mean) > MEAN_SLACK * max(1.0, abs(value)):
            problems.append(f"{where}: value {value} is not 1 / its mean {mean} (a mean <= 0 must be flagged)")
    if not metric.non_positive_mean and value is not None and None not in (metric.low, metric.high) and not (
            metric.low - MEAN_SLACK <= value <= metric.high + MEAN_SLACK):
        problems.append(f"{where}: value {value} is outside its own CI [{metric.low}, {metric.high}]")
    return problems


def per_study_problems(result: Result, table, predicted: tuple[str, ...], about=None) -> list[str]:
    """A per-study table against its result: exactly the columns rexrank writes (study_id, one float64 column per
    metric, the judged metrics' detail columns), its studies the predicted ones, and each metric's n and mean those
    of its column, which has a score for every study (a judged study the judge could not read is at its worst).
    What the table records of how it was made (`about`, a `rules.parquet.About`), when it records it: the result's
    dataset, split and task, and each metric's signature point key."""
    import numpy as np
    import pyarrow as pa

    expected = {"study_id": "text", **{c: k for m in result.metrics if m in METRICS
                                       for c, k in {**spec(m).columns, **spec(m).details}.items()}}
    names = set(table.column_names)
    problems = [f"unexpected column {_show(c, 40)!r}" for c in sorted(names - set(expected))]
    problems += [f"missing column {c!r}" for c in sorted(set(expected) - names)]
    for column, kind in expected.items():
        if column not in names:
            continue
        found = table.schema.field(column).type
        fits = {"score": pa.types.is_float64(found), "mask": pa.types.is_integer(found),
                "count": pa.types.is_integer(found),
                "number": pa.types.is_integer(found) or pa.types.is_floating(found) or pa.types.is_null(found),
                "text": pa.types.is_string(found) or pa.types.is_large_string(found) or pa.types.is_null(found)}[kind]
        if not fits:
            problems.append(f"column {column!r} is {_show(str(found), 30)}, expected "
                            f"{ {'score': 'double', 'number': 'a number', 'text': 'text'}.get(kind, 'an integer')}")
    if about is not None:
        recorded = {"dataset": (about.dataset, result.dataset), "split": (about.split, result.split),
                    "task": (about.task, result.task)}
        for field, (found, expected) in recorded.items():
            if found != expected:
                problems.append(f"records {field} {_show(found, 40)!r}, its result {_show(expected, 40)!r}")
        for name in sorted(set(about.signatures) | set(result.metrics)):
            made = result.metrics.get(name)
            key = made.signature.point_key if made and made.signature else None
            if about.signatures.get(name) != key:
                problems.append(f"{_show(name, 40)}: the table records another signature than its result's")
    if problems:
        return problems
    ids = table.column("study_id").to_pylist()
    if sorted(ids) != sorted(predicted):
        problems.append(f"its {len(ids)} studies are not the {len(predicted)} predicted ones")
    if len(ids) != result.counts.get("scored", len(ids)):
        problems.append(f"{len(ids)} rows, but the result scored {result.counts.get('scored')} studies")
    problems += _sufficient_problems(result, table)
    for name, metric in result.metrics.items():
        if spec(name).sufficient:
            continue
        scored = table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
        low, high = spec(name).bounds
        if len(scored) != metric.n:
            problems.append(f"{name}: {len(scored)} scored studies in the table, n is {metric.n}")
        elif np.isnan(scored).any() or not len(scored):
            problems.append(f"{name}: studies without a score")
        elif abs(float(scored.mean()) - (metric.mean or 0.0)) > MEAN_SLACK:
            problems.append(f"{name}: the table's mean {float(scored.mean())!r} is not the result's {metric.mean!r}")
        elif scored.min() < low - BOUND_SLACK or scored.max() > high + BOUND_SLACK:
            problems.append(f"{name}: per-study scores outside [{low}, {high}], the range of {name}")
    return problems


def _sufficient_problems(result: Result, table) -> list[str]:
    """The metrics made from per-study sufficient statistics (label F1's TP/FP/FN bitmasks, BLEU-4's n-gram counts)
    recomputed from the table: the counts as their metric can make them (its spec's `check`), each metric's n the rows
    and its value what the counts make, exactly (integer sums; the statistic's float steps)."""
    import numpy as np

    names = [name for name in result.metrics if spec(name).sufficient]
    columns = {c: table.column(c).to_numpy(zero_copy_only=False).astype(np.int64)
               for name in names for c in spec(name).columns}
    problems: list[str] = []
    for check in dict.fromkeys(spec(name).check for name in names if spec(name).check is not None):
        problems += check(columns)
    if problems:
        return problems
    for name in names:
        kind, metric = spec(name), result.metrics[name]
        made = float(AGGREGATES[kind.statistic](kind.table(columns).sum(axis=0)))
        if metric.n != table.num_rows:
            problems.append(f"{name}: {table.num_rows} studies in the table, n is {metric.n}")
        elif metric.value != made:
            problems.append(f"{name}: its value {metric.value!r} is not the {made!r} its per-study counts make")
    return problems


def _study_id(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Refused(f"study_id must be text or an integer, got {type(value).__name__}")
    text = str(value)
    if not text.strip() or len(text) > MAX_STUDY_ID:
        raise _Refused(f"study_id must be 1 to {MAX_STUDY_ID} characters")
    if not text.isprintable():
        raise _Refused(f"study_id {_show(text, 40)!r} has control or invisible characters")
    return text


def check_predictions(lines: Iterable[bytes]) -> tuple[str, ...]:
    """Predictions JSONL: each non-blank line one flat JSON object {"study_id", "prediction"} (text), within
    the line length; at most MAX_LINES lines; every study once. Returns the study ids in file order."""
    ids: dict[str, int] = {}
    problems: list[str] = []
    number = 0
    for number, line in enumerate(lines, 1):
        if number > MAX_LINES:
            problems.append(f"more than {MAX_LINES} lines")
            break
        if len(line) > LINE_JSON.max_bytes:
            problems.append(f"line {number}: longer than {LINE_JSON.max_bytes} bytes")
        elif line.strip():
            try:
                ids_line = _prediction_line(line)
            except (InputError, _Refused) as err:
                problems.append(f"line {number}: {err}")
            else:
                if ids_line in ids:
                    problems.append(f"line {number}: study {_show(ids_line, 40)} already on line {ids[ids_line]}")
                else:
                    ids[ids_line] = number
        if len(problems) > MAX_PROBLEMS_PER_FILE:
            problems[-1] = "... and more (stopped looking)"
            break
    if not problems and not ids:
        problems.append("no predictions")
    if problems:
        raise InputError("; ".join(problems))
    return tuple(ids)


def _prediction_line(line: bytes) -> str:
    record = parse_json(line, LINE_JSON)
    if not isinstance(record, dict):
        raise _Refused(f"expected a JSON object, got {type(record).__name__}")
    unknown = [k for k in record if k not in ("study_id", "prediction")]
    if unknown:
        raise _Refused(f"unknown field {_show(unknown[0], 40)!r} (fields: study_id, prediction)")
    if "study_id" not in record or "prediction" not in record:
        raise _Refused("needs study_id and prediction")
    if not isinstance(record["prediction"], str):
        raise _Refused(f"prediction must be text, got {type(record['prediction']).__name__}")
    return _study_id(record["study_id"])


