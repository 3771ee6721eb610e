"""CheXpert Plus from its original release, the way ReXrank's `ReXRank_CheXpertPlus.json` (valid, 200 studies) was
made.

    read_chexpert_plus([Path("df_chexpert_plus_240401.csv")], "valid", image_root=Path("PNG"))

The release's `df_chexpert_plus_240401.csv` (223,462 rows, one per image; also read as .csv.gz) has 27 columns:
path_to_image, path_to_dcm, frontal_lateral, ap_pa, deid_patient_id, patient_report_date_order, report,
section_narrative, section_clinical_history, section_history, section_comparison, section_technique,
section_procedure_comments, section_findings, section_impression, section_end_of_impression, section_summary,
section_accession_number, age, sex, race, ethnicity, interpreter_needed, insurance_type, recent_bmi, deceased, split.

ReXrank's study is CheXpert's study folder: `path_to_image` `valid/patient64620/study1/view1_frontal.jpg` belongs to
study `patient64620_study1`, whose `image_path` lists `valid/patient64620/study1/view1_frontal.png` (the PNG release,
relative to its `PNG/` folder). Its `section_findings`/`section_impression` are the CSV's cells unchanged, leading
newline included (ReXrank's JSON keeps them so), missing where pandas reads NaN; its context is
`Age:<age>.Gender:<F|M|U>.Indication:<section_clinical_history>Comparison: None.` (`nan` where a cell is empty; the
comparison is the constant `None.` in all 200 studies).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import pandas as pd

from rexrank.catalog import TEST_SETS
from rexrank.data.build import Build, DatasetInfo
from rexrank.data.originals import DAMAGED, checksums, damaged, missing_images, note, some
from rexrank.errors import InputError

CSV = "df_chexpert_plus_240401.csv"
HELP = f"the release's {CSV} (or .csv.gz), one row per image"
REQUIRED = ("path_to_image", "split", "section_findings", "section_impression")
OPTIONAL = ("frontal_lateral", "ap_pa", "section_clinical_history", "age", "sex")  # views and context
EXPECTED = f"CheXpert Plus's {CSV} (columns {', '.join(REQUIRED)}, ...)"


def read_chexpert_plus(sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    return read_originals(TEST_SETS["chexpert-plus"].info, sources, split, image_root)


def read_originals(info: DatasetInfo, sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    path = _the_csv(info, sources)
    rows = _rows(path, split)
    studies: dict[str, list[dict]] = {}
    for row in rows:
        studies.setdefault(_study_id(path, row["path_to_image"]), []).append(row)
    repeated = sorted(s for s, images in studies.items()
                      if len({r["path_to_image"] for r in images}) != len(images))
    if repeated:
        raise InputError(f"{path}: an image is listed more than once in study(ies) {some(repeated)}")
    disagree = sorted(s for s, images in studies.items()
                      if any(not _same(r[c], images[0][c]) for r in images for c in ("section_findings",
                                                                                      "section_impression")))
    if disagree:
        raise InputError(f"{path}: the images of study(ies) {some(disagree)} carry different report sections; "
                         "a study has one report")
    out, no_sections = [], []
    for study_id, images in studies.items():
        first = images[0]
        findings, impression = _text(first["section_findings"]), _text(first["section_impression"])
        if findings is None and impression is None:
            no_sections.append(study_id)
        out.append({"study_id": study_id, "findings": findings, "impression": impression,
                    "image_paths": [_png(r["path_to_image"]) for r in images], "views": [_view(r) for r in images],
                    "context": _context(first), "source": path.name})
    notes = [note("studies with neither a findings nor an impression section", no_sections)] if no_sections else []
    notes += missing_images(((r["study_id"], r["image_paths"]) for r in out), image_root)
    return Build(info, split, pd.DataFrame(out), checksums([path]), notes)


def _the_csv(info: DatasetInfo, sources: Sequence[Path]) -> Path:
    if len(sources) != 1:
        raise InputError(f"{info.name}: give one --source, {HELP} (given {len(sources)})")
    path = sources[0]
    if path.is_dir():
        found = sorted(path.glob("df_chexpert_plus_*.csv*"))
        if len(found) != 1:
            raise InputError(f"{path}: expected one {CSV} in this folder, found {len(found)}")
        path = found[0]
    if not path.name.endswith((".csv", ".csv.gz")):
        raise InputError(f"{info.name}: {path} is not a CSV; expected {EXPECTED}")
    return path


def _rows(path: Path, split: str) -> list[dict]:
    """The CSV's rows of `split`, in file order; pandas' default reading (as the release's own examples read it)."""
    try:
        header = pd.read_csv(path, nrows=0).columns
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise InputError(f"{path}: no column(s) {', '.join(missing)} (it has {', '.join(map(str, header[:12]))}"
                             f"{' ...' if len(header) > 12 else ''}); expected {EXPECTED}")
        frame = pd.read_csv(path, usecols=[c for c in (*REQUIRED, *OPTIONAL) if c in header],
                            dtype={"path_to_image": str, "split": str})
    except DAMAGED as err:
        raise damaged(path, err, CSV) from None
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise InputError(f"{path}: not readable as CSV ({type(err).__name__}); expected {EXPECTED}") from None
    chosen = frame[frame["split"] == split]
    if chosen.empty:
        present = ", ".join(sorted(map(str, frame["split"].dropna().unique()))) or "none"
        raise InputError(f"{path}: no rows with split {split!r} (splits here: {present})")
    for column in ("section_findings", "section_impression", "section_clinical_history"):
        if column in chosen.columns:
            odd = chosen["path_to_image"][chosen[column].map(lambda v: not (isinstance(v, str) or _nan(v)))]
            if len(odd):
                raise InputError(f"{path}: {column} is not text for image(s) {some(odd.tolist())}")
    return chosen.to_dict("records")


def _study_id(path: Path, image: object) -> str:
    parts = PurePosixPath(str(image)).parts
    if len(parts) != 4 or not parts[1].startswith("patient") or not parts[2].startswith("study"):
        raise InputError(f"{path}: path_to_image {image!r} is not <split>/patient<n>/study<n>/<view>.jpg")
    return f"{parts[1]}_{parts[2]}"


def _png(image: str) -> str:
    """ReXrank's image path: the PNG release's name for the CSV's .jpg."""
    return str(PurePosixPath(image).with_suffix(".png")) if image.endswith(".jpg") else image


def _view(row: dict) -> str | None:
    """AP/PA where the CSV says; LATERAL for a lateral; FRONTAL for a frontal whose AP/PA is not given."""
    ap_pa, frontal_lateral = row.get("ap_pa"), row.get("frontal_lateral")
    if isinstance(ap_pa, str) and ap_pa.strip():
        return ap_pa.strip().upper()
    if isinstance(frontal_lateral, str) and frontal_lateral.strip():
        return frontal_lateral.strip().upper()
    return None


def _context(row: dict) -> str | None:
    if not {"age", "sex", "section_clinical_history"} <= set(row):
        return None
    age, sex = row["age"], row["sex"]
    age = str(float(age)) if isinstance(age, (int, float)) else str(age)  # pandas' float: 77.0, nan
    gender = sex[0] if isinstance(sex, str) and sex else "nan"
    return f"Age:{age}.Gender:{gender}.Indication:{row['section_clinical_history']}Comparison: None."


def _nan(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _same(a: object, b: object) -> bool:
    return (_nan(a) and _nan(b)) or a == b


def _text(value: object) -> str | None:
    return None if _nan(value) else value
