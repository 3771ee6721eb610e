"""Import of the official ReXrank leaderboard tables (docs/metrics.md §10).

`findings_result_<dataset>.csv` is the findings task, `result_<dataset>.csv` findings+impression. Rows may
have 12 fields (a missing trailing column); files may lack a final newline. Each row's published
1/RadCliQ-v1 is checked against its four rounded components: the composite is linear, so the exact range
of 1/RadCliQ-v1 implied by components known to +-half a unit of their last decimal is computed and must
overlap the published value's own rounding interval. Rows outside it are flagged, never silently accepted.

The eight tables as the leaderboard published them (2025-09) ship with rexrank, imported: `SHIPPED` is a results
repo holding only `imported/` (and its README, the attribution). `rexrank leaderboard` opens on it, and
`python -m rexrank.backend bootstrap` starts a results repo from it.

The tables say nothing of how a model can be had or what it was trained on. `FACTS` (`models.tsv` beside the
imported rows) does, per model, each fact with the public page that states it, blank where none was found; every
imported row carries its model's (`checks.model_facts`), so the board can filter the official rows by access and
training data.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

from rexrank import __version__
from rexrank.catalog import ACCESS, TEST_SETS
from rexrank.errors import InputError
from rexrank.reports import FINDINGS, FINDINGS_IMPRESSION, MISSING, PREDICTION_TEXT, REFERENCE_TEXT
from rexrank.results import MetricResult, ModelInfo, Result, model_slug
from rexrank.scorers import BOARD_METRICS, inverted, shown, spec
from rexrank.scorers import published as record
from rexrank.scorers.radcliq import COMPONENTS, RADCLIQ_V1
from rexrank.signature import Signature

HEADER = ("Rank", "Date", "Model Name", "Institution", "Model URL", "BLEU", "BertScore", "SembScore", "RadGraph",
          "1/RadCliQ-v1", "RaTEScore", "GREEN", "1/FineRadScore")
# A table's column -> our metric name: the board's metrics these tables publish (a board column they lack is blank in
# the imported rows).
METRIC_COLUMNS = {shown(m): m for m in BOARD_METRICS if shown(m) in HEADER}
INVERSE_COLUMNS = tuple(c for c, m in METRIC_COLUMNS.items() if inverted(m))  # published as 1 / mean
TABLE_KEYS = {t.official_key: t.name for t in TEST_SETS.values() if t.official_key}  # a table's key -> our name
SPLITS = {t.name: t.split for t in TEST_SETS.values()}
_NAME = re.compile(r"^(findings_)?result_(" + "|".join(TABLE_KEYS) + r")$")
SOURCE = "rexrank.ai official table"
SHIPPED = Path(__file__).parent / "resources" / "official"  # the tables of SHIPPED_AS_OF, imported
SHIPPED_AS_OF = "2025-09"
IMPORTED = "imported"  # a results repo's folder of imported rows
FACTS = SHIPPED / "models.tsv"  # each official model's access and training data, with the page that says so
FACTS_HEADER = ("model", "access", "access_source", "trained_on", "trained_on_source", "note")
UNKNOWN = "unknown"


@dataclass(frozen=True)
class ModelFacts:
    """What `FACTS` says of a model: how it can be had (an ACCESS key; "" unknown) and what it was trained on (()
    unknown), each with the page that says so."""

    access: str = ""
    access_source: str = ""
    trained_on: tuple[str, ...] = ()
    trained_on_source: str = ""

    def to_json(self) -> dict:
        return {"access": self.access, "access_source": self.access_source, "trained_on": list(self.trained_on),
                "trained_on_source": self.trained_on_source}


def _facts_key(name: str) -> str:
    return name.strip().casefold().replace("_", "-")  # the tables spell CheXpertPlus_CheX and CheXpertPlus-CheX


@cache
def model_facts(path: Path = FACTS) -> dict[str, ModelFacts]:
    """`FACTS` read: the model's name (casefolded, "_" as "-") -> its facts. A fact must name its source, an access
    must be one of ACCESS or unknown, and a model appears once; otherwise InputError, naming the line."""
    facts: dict[str, ModelFacts] = {}
    lines = [(n, line) for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if line.strip() and not line.startswith("#")]
    if not lines or tuple(lines[0][1].split("\t")) != FACTS_HEADER:
        raise InputError(f"{path}: expected the header {' '.join(FACTS_HEADER)} (tab-separated)")
    for number, line in lines[1:]:
        cells = line.split("\t")
        if len(cells) != len(FACTS_HEADER):
            raise InputError(f"{path}:{number}: {len(cells)} fields, not {len(FACTS_HEADER)}")
        model, access, access_source, trained_on, trained_on_source, _ = (c.strip() for c in cells)
        access = "" if access == UNKNOWN else access
        if access and access not in ACCESS:
            raise InputError(f"{path}:{number}: {model}: access {access!r}, expected {', '.join(ACCESS)} or unknown")
        if (access and not access_source) or (trained_on and not trained_on_source):
            raise InputError(f"{path}:{number}: {model}: a fact without its source")
        if _facts_key(model) in facts:
            raise InputError(f"{path}:{number}: {model} a second time")
        facts[_facts_key(model)] = ModelFacts(access, access_source if access else "",
                                              tuple(t.strip() for t in trained_on.split(";") if t.strip()),
                                              trained_on_source if trained_on else "")
    return facts


@dataclass(frozen=True)
class OfficialRow:
    dataset: str
    task: str
    rank: int
    date: str
    model: ModelInfo
    values: dict[str, float | None]  # our metric names -> published value (None: column missing)
    consistent: bool | None  # None: a component is missing, nothing to check
    implied_inverse_radcliq: tuple[float, float] | None  # range from the rounded components
    placeholders: tuple[str, ...] = ()  # columns whose published 0 stands for "not scored" (imported as missing)
    facts: ModelFacts | None = field(default=None)  # what FACTS says of the model (None: FACTS has no row for it)

    def to_json(self) -> dict:
        return {"dataset": self.dataset, "task": self.task, "rank": self.rank, "date": self.date,
                "model": self.model.name, "institution": self.model.institution, "url": self.model.url,
                **self.values, "consistent": self.consistent, "placeholders": list(self.placeholders),
                "implied_radcliq_v1": list(self.implied_inverse_radcliq) if self.implied_inverse_radcliq else None,
                **({"model_facts": self.facts.to_json()} if self.facts else {})}

    def to_result(self, as_of: str | None = None) -> Result:
        """The row as an imported result; `as_of` (YYYY-MM): when the table was published, its creation time."""
        stamp = {"created": f"{as_of}-01T00:00:00Z"} if as_of else {}
        return Result(
            **stamp,
            model=self.model, dataset=self.dataset, split=SPLITS[self.dataset], task=self.task,
            metrics={name: MetricResult(value, statistic="inverse_mean" if name.startswith(("radcliq", "finerad"))
                                        else "mean")
                     for name, value in self.values.items() if value is not None},
            provenance="imported",
            checks={"source": SOURCE, **({"published": as_of} if as_of else {}), "rank": self.rank, "date": self.date,
                    "radcliq_v1_consistent": self.consistent, "placeholders": list(self.placeholders),
                    "implied_radcliq_v1": list(self.implied_inverse_radcliq) if self.implied_inverse_radcliq else None,
                    **({"note": self.note} if self.note else {}),
                    **({"model_facts": self.facts.to_json()} if self.facts else {})},
        )


    @property
    def note(self) -> str:
        """What the board says beside the row: an inconsistency, a placeholder read as missing."""
        notes = []
        if self.consistent is False and self.implied_inverse_radcliq:
            low, high = self.implied_inverse_radcliq
            notes.append(f"published 1/RadCliQ-v1 {self.values['radcliq_v1']} is outside [{low:.4f}, {high:.4f}], "
                         "what its rounded components imply")
        notes += [f"published {column} 0 read as not scored" for column in self.placeholders]
        return "; ".join(notes)


# What an imported file is compared on: everything it says but the rexrank release that wrote it (a release that
# changes no figure rewrites every shipped file with its own version; the figures, their notes and facts are the same).
_NOT_COMPARED = ("rexrank_version",)


@cache
def shipped_figures() -> dict[str, dict]:
    """Each imported file this rexrank ships (`SHIPPED/imported`), by file name, as the JSON object compared."""
    return {path.name: _comparable(path.read_bytes()) for path in sorted((SHIPPED / IMPORTED).glob("*.json"))}


def _comparable(data: bytes) -> dict | None:
    try:
        found = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return {k: v for k, v in found.items() if k not in _NOT_COMPARED} if isinstance(found, dict) else None


def shipped_problem(name: str, data: bytes) -> str | None:
    """None when `data`, a results repo's `imported/<name>`, says exactly what the figure this rexrank ships under
    that name says; else why not (docs/security.md, rule 21)."""
    shipped = shipped_figures().get(name)
    if shipped is None:
        return f"not among the {len(shipped_figures())} official figures rexrank {__version__} ships"
    if _comparable(data) != shipped:
        return f"differs from the official figure rexrank {__version__} ships under that name"
    return None


def imported_path(repo: Path, row: OfficialRow) -> Path:
    """Where a results repo keeps an imported row: imported/<dataset>.<task>.<model slug>.json."""
    return repo / IMPORTED / f"{row.dataset}.{row.task}.{model_slug(row.model.name)}.json"


def dataset_and_task(path: str | os.PathLike) -> tuple[str, str]:
    match = _NAME.match(Path(path).stem)
    if not match:
        raise InputError(f"{path}: expected findings_result_<dataset>.csv or result_<dataset>.csv with <dataset> "
                         f"one of {', '.join(TABLE_KEYS)}")
    return TABLE_KEYS[match.group(2)], FINDINGS if match.group(1) else FINDINGS_IMPRESSION


def _half_unit(decimals: int) -> Decimal:
    return Decimal(1).scaleb(-decimals) / 2


def _decimals(text: str) -> int:
    try:
        return -Decimal(text).as_tuple().exponent if text else 0
    except InvalidOperation:
        return 0  # reported as "not a number" where the row is read


def implied_inverse_radcliq(components: list[str], decimals: list[int]) -> tuple[float, float] | None:
    """Exact range of 1/RadCliQ-v1 when each component lies within half a unit of its last decimal."""
    low, high = RADCLIQ_V1.bounds([float(c) for c in components], [float(_half_unit(d)) for d in decimals])
    if low <= 0:
        return None  # the inverse is not monotone across 0: nothing sensible to compare with
    return 1 / high, 1 / low


def read_official_csv(path: str | os.PathLike) -> list[OfficialRow]:
    dataset, task = dataset_and_task(path)
    with open(path, encoding="utf-8", newline="") as handle:
        table = list(csv.reader(handle))
    if not table or tuple(table[0]) != HEADER:
        raise InputError(f"{path}: header is not the official one:\n  {','.join(HEADER)}")
    body = [row + [""] * (len(HEADER) - len(row)) for row in table[1:] if row]
    for number, row in enumerate(body, 2):
        if len(row) != len(HEADER):
            raise InputError(f"{path}:{number}: {len(row)} fields, more than the header's {len(HEADER)}")
    # The tables round each column to a fixed number of decimals and drop trailing zeros (0.43 is 0.430).
    column_decimals = {c: max(_decimals(r[i].strip()) for r in body) for i, c in enumerate(HEADER)
                       if c in METRIC_COLUMNS}
    rows = []
    for number, row in enumerate(body, 2):
        cells = dict(zip(HEADER, (cell.strip() for cell in row)))
        try:
            values = {METRIC_COLUMNS[c]: float(cells[c]) if cells[c] else None for c in METRIC_COLUMNS}
        except ValueError as err:
            raise InputError(f"{path}:{number}: {cells['Model Name']}: not a number ({err})") from None
        # 1/mean is never 0 (a mean is finite): a published 0 there stands for "not scored" (UniRG-CXR's CheXpert
        # Plus findings 1/FineRadScore), so it is imported as missing, not ranked as the worst value.
        placeholders = [c for c in INVERSE_COLUMNS if values[METRIC_COLUMNS[c]] == 0]
        values |= {METRIC_COLUMNS[c]: None for c in placeholders}
        by_name = {METRIC_COLUMNS[c]: c for c in METRIC_COLUMNS}
        texts = [cells[by_name[name]] for name in COMPONENTS]
        published = cells["1/RadCliQ-v1"]
        implied = consistent = None
        if all(texts) and published:
            implied = implied_inverse_radcliq(texts, [column_decimals[by_name[n]] for n in COMPONENTS])
            half = float(_half_unit(column_decimals["1/RadCliQ-v1"]))
            consistent = implied is not None and implied[0] - half <= float(published) <= implied[1] + half
        rows.append(OfficialRow(dataset, task, int(cells["Rank"]), cells["Date"],
                                ModelInfo(cells["Model Name"], cells["Institution"], cells["Model URL"]),
                                values, consistent, implied, tuple(placeholders),
                                model_facts().get(_facts_key(cells["Model Name"]))))
    return rows


# What the published figures were made with, as far as ReXrank says (docs/metrics.md): the texts as the board makes
# them and fp32 here; the rest is each metric's own record (`published`) and words (`Spec.departures`: the pinned
# weights, GREEN by its own model, FineRadScore by a GPT-4 model with the reference's examples). A verified number made
# otherwise is marked beside the imported ones: the two are not the same measure.


def departures(signature: Signature) -> list[str]:
    """How a verified number's making departs from the published figures', one phrase each; none: it does not (as
    far as the signature and what ReXrank published can tell)."""
    return _texts(signature) + _made(signature)


def _texts(signature: Signature) -> list[str]:
    """How the texts a number was made on depart from the board's (docs/metrics.md §0): its references' version,
    the task's rule for a missing section, the predictions. Read from a number's own signature (a composite's
    components carry none)."""
    settings, out = signature.settings, []
    refs = settings.get("refs")
    if refs != REFERENCE_TEXT:
        made = ("with their whitespace as stored (no refs in its signature: made before rexrank collapsed it)"
                if refs is None else refs)
        out.append(f"{signature.metric} on references {made}, the published on references {REFERENCE_TEXT}")
    if settings.get("missing", "") not in ("", *MISSING.values()):
        out.append(f"{signature.metric} with missing sections {settings['missing']}, the published "
                   f"{' or '.join(MISSING.values())} by task")
    if settings.get("preds", PREDICTION_TEXT) != PREDICTION_TEXT:
        out.append(f"{signature.metric} on predictions {settings['preds']}, the published {PREDICTION_TEXT}")
    return out


def _made(signature: Signature) -> list[str]:
    out = []
    if signature.settings.get("dtype", "fp32") != "fp32":
        out.append(f"{signature.metric} in {signature.settings['dtype']}, the published in fp32")
    try:
        out += spec(signature.metric).departures(signature)
    except KeyError:  # not a metric of this rexrank (RadRScore's parts, say): nothing recorded
        out += record.weights(signature)
    for component in signature.components:
        out += _made(component)
    return out
