"""ReXGradient from its release layout: the gated Hub dataset `rajpurkarlab/ReXGradient-160K` (train/valid/test) and
the ReXrank maintainers' private test set, which comes in the same fields.

    read_rexgradient([Path("metadata/test_metadata.json")], "test", image_root=Path("deid_png"))

The Hub dataset's `metadata/` folder has, per split, `<split>_metadata.json` (and `<split>_metadata_view_position.json`,
whose view positions are the better ones): `{"<id>": {"PatientID", "AccessionNumber", "StudyInstanceUid", "StudyDate",
"PatientSex", "PatientAge", "Indication", "Comparison", "Findings", "Impression", "ImagePath": [...],
"ImageViewPosition": [...], ...}}`, one entry per study, image lists parallel; and `<split>_metadata.csv`, one row per
study with the id in column `id`. Image paths read `../deid_png/<patient>/<accession>/studies/.../<sop>.png`
(relative to `metadata/`); we keep them relative to `deid_png/` (the extracted `deid_png.part*` archive).

Sources: one metadata file (.json, .json.gz, .csv, .csv.gz), the `metadata/` folder (the split's file is chosen), or a
JSON and a CSV of the same split (reports from whichever has them, images from whichever has them). The study id is
the metadata's key. Report text is never printed: messages name study ids and fields.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rexrank.catalog import TEST_SETS
from rexrank.data.build import Build, DatasetInfo
from rexrank.data.originals import DAMAGED, checksums, damaged, missing_images, note, read_json, some
from rexrank.errors import InputError

HELP = ("ReXGradient-160K's metadata/ folder or one <split>_metadata.json / _metadata_view_position.json / "
        "_metadata.csv (the private test file in the same fields)")
SECTIONS = ("Findings", "Impression")
EXPECTED = ("ReXGradient metadata: {\"<study id>\": {\"Findings\", \"Impression\", \"ImagePath\": [...], "
            "\"ImageViewPosition\": [...], ...}} as JSON, or a CSV with columns id, Findings, Impression")
SPLIT_FILE = re.compile(r"^(train|valid|test)_metadata")


def read_rexgradient(sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    return read_originals(TEST_SETS["rexgradient"].info, sources, split, image_root)


def read_originals(info: DatasetInfo, sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    files = _files(info, sources, split)
    tables = [_read(path) for path in files]
    studies = _merge(files, tables)
    rows, no_sections, literal_none = [], [], []
    for study_id, record in studies.items():
        sections = {}
        for field in ("Findings", "Impression", "Indication", "Comparison"):
            value = record.get(field)
            if not (value is None or isinstance(value, str) or (isinstance(value, float) and math.isnan(value))):
                raise InputError(f"{_name(files)}: study {study_id}: {field} is a {type(value).__name__}, not text")
            sections[field] = value if isinstance(value, str) and value.strip() else None
        if sections["Findings"] is None and sections["Impression"] is None:
            no_sections.append(study_id)
        if any((sections[f] or "").strip() == "None" for f in SECTIONS):
            literal_none.append(study_id)
        images, views = _images(files, study_id, record)
        rows.append({"study_id": study_id, "findings": sections["Findings"], "impression": sections["Impression"],
                     "image_paths": images, "views": views, "context": _context(sections),
                     "source": _name(files)})
    notes = []
    if no_sections:
        notes.append(note("studies with neither Findings nor Impression", no_sections))
    if literal_none:
        notes.append(note("studies with a section whose text is the word None (kept as text, as the source has it)",
                          literal_none))
    notes += missing_images(((r["study_id"], r["image_paths"]) for r in rows), image_root)
    return Build(info, split, pd.DataFrame(rows), checksums(files), notes)


def _files(info: DatasetInfo, sources: Sequence[Path], split: str) -> list[Path]:
    if len(sources) == 1 and sources[0].is_dir():
        folder = sources[0] / "metadata" if (sources[0] / "metadata").is_dir() else sources[0]
        for name in (f"{split}_metadata_view_position.json", f"{split}_metadata.json", f"{split}_metadata.csv"):
            for candidate in (folder / name, folder / f"{name}.gz"):
                if candidate.is_file():
                    return [candidate]
        raise InputError(f"{folder}: no {split}_metadata.json, {split}_metadata_view_position.json or "
                         f"{split}_metadata.csv here; expected {HELP}")
    kinds = [_kind(info, p) for p in sources]
    if len(sources) > 2 or len(set(kinds)) != len(kinds):
        raise InputError(f"{info.name}: give one metadata file, or one JSON and one CSV of the same split "
                         f"(given {', '.join(str(p) for p in sources)})")
    for path in sources:
        named = SPLIT_FILE.match(path.name)
        if named and named.group(1) != split:
            raise InputError(f"{path} is the {named.group(1)} split; pass --split {named.group(1)} (or give the "
                             f"{split} file)")
    return list(sources)


def _kind(info: DatasetInfo, path: Path) -> str:
    if path.name.endswith((".json", ".json.gz")):
        return "json"
    if path.name.endswith((".csv", ".csv.gz")):
        return "csv"
    raise InputError(f"{info.name}: {path} is neither JSON nor CSV; expected {HELP}")


def _read(path: Path) -> dict[str, dict]:
    """study id -> record, in file order."""
    if path.name.endswith((".json", ".json.gz")):
        data = read_json(path, EXPECTED)
        if not isinstance(data, dict) or not data or not all(isinstance(r, dict) for r in data.values()):
            raise InputError(f"{path}: not {EXPECTED}")
        fields = set().union(*(r.keys() for r in data.values()))
        if not ({"ImagePath"} | set(SECTIONS)) & fields:
            raise InputError(f"{path}: no Findings, Impression or ImagePath fields (it has "
                             f"{', '.join(sorted(fields)[:12])}); expected {EXPECTED}")
        return {str(k): v for k, v in data.items()}
    try:
        frame = pd.read_csv(path, dtype={"id": str}, keep_default_na=False, na_values=[""])  # "None" stays text
    except DAMAGED as err:
        raise damaged(path, err, path.name) from None
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not readable as CSV ({type(err).__name__}); expected {EXPECTED}") from None
    if "id" not in frame.columns or not ({"ImagePath"} | set(SECTIONS)) & set(frame.columns):
        raise InputError(f"{path}: no id column or no Findings/Impression/ImagePath columns (it has "
                         f"{', '.join(map(str, frame.columns[:12]))}); expected {EXPECTED}")
    repeated = sorted(frame["id"][frame["id"].duplicated()].unique())
    if repeated:
        raise InputError(f"{path}: study id(s) listed more than once: {some(repeated)}")
    records = frame.to_dict("records")
    return {r["id"]: r for r in records}


def _merge(files: list[Path], tables: list[dict[str, dict]]) -> dict[str, dict]:
    """One record per study; a JSON and a CSV must list the same studies."""
    if len(tables) == 1:
        return tables[0]
    (a, b), (file_a, file_b) = tables, files
    only_a, only_b = [i for i in a if i not in b], [i for i in b if i not in a]
    if only_a or only_b:
        raise InputError(f"{file_a.name} and {file_b.name} list different studies: {len(only_a):,} only in "
                         f"{file_a.name} ({some(only_a)}), {len(only_b):,} only in {file_b.name} ({some(only_b)})")
    merged = {}
    for study_id, record in a.items():
        other = b[study_id]
        merged[study_id] = {**record, **{k: v for k, v in other.items() if k not in record or _missing(record[k])}}
    return merged


def _images(files: list[Path], study_id: str, record: dict) -> tuple[list[str], list[str | None]]:
    paths, views = _as_list(record.get("ImagePath")), _as_list(record.get("ImageViewPosition"))
    if not views:
        views = [None] * len(paths)
    if len(views) != len(paths) or not all(isinstance(p, str) for p in paths):
        raise InputError(f"{_name(files)}: study {study_id}: ImagePath and ImageViewPosition are not parallel "
                         f"lists ({len(paths)} paths, {len(views)} views)")
    return [_relative(p) for p in paths], [v if isinstance(v, str) and v.strip() else None for v in views]


def _as_list(value: object) -> list:
    """A JSON list; in a CSV, the list written as text (`['../deid_png/...', ...]`) or one path."""
    if isinstance(value, list):
        return value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            parsed = None
        if isinstance(parsed, list):
            return parsed
    return [] if _missing(value) else [value]


def _relative(path: str) -> str:
    """`../deid_png/<patient>/...png` -> `<patient>/...png`, relative to the deid_png/ image root."""
    while path.startswith("../"):
        path = path[3:]
    return path.removeprefix("deid_png/")


def _context(sections: dict[str, str | None]) -> str | None:
    """**Ours** (the private file's context is not published): `Indication: <i> Comparison: <c>`, the parts
    present."""
    parts = [f"{field}: {sections[field]}" for field in ("Indication", "Comparison") if sections[field]]
    return " ".join(parts) or None


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (isinstance(value, str)
                                                                                 and not value.strip())


def _name(files: list[Path]) -> str:
    return " + ".join(p.name for p in files)
