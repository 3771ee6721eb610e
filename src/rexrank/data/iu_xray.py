"""IU-Xray (Open-i) from its original releases, the way ReXrank's `ReXRank_IUXray_{test,valid}.json` were made.

    read_iu_xray([Path("annotation.json"), Path("ecgen-radiology")], "test", image_root=Path("images"))

Two sources, both needed:

- R2Gen's `annotation.json` (github.com/zhjohnchan/R2Gen, data/iu_xray): `{"train": [...], "val": [...], "test":
  [...]}`, records `{"id": "CXR3030_IM-1405", "report": ..., "image_path": ["CXR3030_IM-1405/0.png", ...],
  "split": ...}`. ReXrank's split is R2Gen's: the same studies (test 590, "val" 296, which ReXrank calls valid) in
  the same order, its study id R2Gen's `id`, its `section_findings` R2Gen's `report` verbatim, its `image_path`
  R2Gen's (relative to R2Gen's `images/` folder).
- The Open-i reports (`NLMCXR_reports.tgz` from openi.nlm.nih.gov, or the `ecgen-radiology/` folder it unpacks to):
  one XML per report, `<uId id="CXR3030"/>` and `<AbstractText Label="FINDINGS|IMPRESSION|INDICATION|COMPARISON">`.
  A study's report is the one whose uId is the study id up to its first `_`. ReXrank's `section_impression` is the
  IMPRESSION text, and its `context` `Indication: <INDICATION> Comparison: <COMPARISON>` (the indication part left
  out, the space kept, where there is none).

ReXrank's `frontal_lateral`/`key_image_path` come from neither source (its view lists cover every Open-i image of the
report, not R2Gen's two), so `views` stay unknown here. See docs/reference-notes/datasets.md.
"""

from __future__ import annotations

import tarfile
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rexrank.catalog import TEST_SETS
from rexrank.data.build import Build, DatasetInfo
from rexrank.data.originals import DAMAGED, checksums, damaged, missing_images, note, read_json, some
from rexrank.errors import InputError

HELP = ("R2Gen's annotation.json and the Open-i reports: the ecgen-radiology/ folder of XML files, or "
        "NLMCXR_reports.tgz")
ANNOTATION = ('R2Gen\'s annotation.json, {"train": [...], "val": [...], "test": [...]} of records with id, report, '
              "image_path")
REPORTS = "the Open-i reports (NLMCXR_reports.tgz, or the ecgen-radiology/ folder of <n>.xml files)"
R2GEN_SPLIT = {"test": "test", "valid": "val", "train": "train"}  # ReXrank's split name -> R2Gen's key


@dataclass(frozen=True)
class OpenIReport:
    uid: str  # "CXR3030"
    file: str
    sections: dict[str, str]  # FINDINGS, IMPRESSION, INDICATION, COMPARISON -> text, where present and not blank


def read_iu_xray(sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    return read_originals(TEST_SETS["iu-xray"].info, sources, split, image_root)


def read_originals(info: DatasetInfo, sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    annotation, reports_source = _sort_sources(info, sources)
    records = _r2gen_split(annotation, split)
    wanted = {_uid(r["id"]) for r in records}
    reports = {uid: report for uid, report in _open_i_reports(reports_source) if uid in wanted}
    rows, no_report, no_sections, report_differs = [], [], [], []
    for record in records:
        study_id = record["id"]
        report = reports.get(_uid(study_id))
        sections = report.sections if report else {}
        if report is None:
            no_report.append(study_id)
        elif not {"FINDINGS", "IMPRESSION"} & set(sections):
            no_sections.append(study_id)
        if report is not None and sections.get("FINDINGS") != record["report"]:
            report_differs.append(study_id)
        images = list(record["image_path"])
        rows.append({"study_id": study_id, "findings": record["report"], "impression": sections.get("IMPRESSION"),
                     "image_paths": images, "views": [None] * len(images),
                     "context": context(sections) if report else None,
                     "source": f"{annotation.name}[{R2GEN_SPLIT[split]}] + {report.file if report else '-'}"})
    notes = []
    if no_report:
        notes.append(note(f"studies with no Open-i report in {reports_source.name} (impression and context left empty)",
                          no_report))
    if no_sections:
        notes.append(note("studies whose Open-i report has no FINDINGS or IMPRESSION section", no_sections))
    if report_differs:
        notes.append(note("studies whose Open-i FINDINGS differs from R2Gen's report (the findings are R2Gen's, as "
                          "in ReXrank)", report_differs))
    notes += missing_images(((r["study_id"], r["image_paths"]) for r in rows), image_root)
    return Build(info, split, pd.DataFrame(rows), checksums([annotation, reports_source]), notes)


def context(sections: dict[str, str]) -> str:
    """ReXrank's IU-Xray context: `Indication: <i> Comparison: <c>`; no indication -> ` Comparison: <c>`; a missing
    comparison is written `None` (**ours**: ReXrank's 886 studies cannot tell it from the literal text `None`)."""
    indication = sections.get("INDICATION")
    return (f"Indication: {indication}" if indication else "") + f" Comparison: {sections.get('COMPARISON')}"


def _uid(study_id: str) -> str:
    """R2Gen's id `CXR3030_IM-1405` (or `CXR1_1_IM-0001`) -> the Open-i report's uId `CXR3030`."""
    return study_id.split("_", 1)[0]


def _sort_sources(info: DatasetInfo, sources: Sequence[Path]) -> tuple[Path, Path]:
    annotations, reports = [], []
    for path in sources:
        if path.is_dir() or path.name.endswith((".tgz", ".tar.gz", ".tar")):
            reports.append(path)
        elif path.name.endswith((".json", ".json.gz")):
            annotations.append(path)
        else:
            raise InputError(f"{info.name}: {path} is neither {ANNOTATION} nor {REPORTS}")
    for found, expected in ((annotations, ANNOTATION), (reports, REPORTS)):
        if len(found) != 1:
            given = ", ".join(str(p) for p in found) or "none"
            raise InputError(f"{info.name}: give one --source for {expected} (given: {given}); the original release "
                             f"needs {HELP} (or give ReXrank's split JSON alone)")
    return annotations[0], reports[0]


def _r2gen_split(path: Path, split: str) -> list[dict]:
    if split not in R2GEN_SPLIT:
        raise InputError(f"iu-xray: no split {split!r} in R2Gen's annotation.json; choose one of "
                         f"{', '.join(R2GEN_SPLIT)}")
    data = read_json(path, ANNOTATION)
    if not isinstance(data, dict) or not any(isinstance(v, list) for v in data.values()):
        raise InputError(f"{path}: not {ANNOTATION}")
    key = R2GEN_SPLIT[split]
    if not isinstance(data.get(key), list):
        raise InputError(f"{path}: no {key!r} list (it has {', '.join(repr(k) for k in data)}); expected {ANNOTATION}")
    records, bad = data[key], []
    for number, record in enumerate(records):
        if not (isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"].startswith("CXR")
                and isinstance(record.get("report"), str) and isinstance(record.get("image_path"), list)
                and all(isinstance(p, str) for p in record["image_path"])):
            name = record.get("id") if isinstance(record, dict) else None
            bad.append(f"{key}[{number}]" + (f" (id {name!r})" if isinstance(name, str) else ""))
    if bad:
        raise InputError(f"{path}: {len(bad):,} record(s) without a CXR<n>_... id, a report string and an image_path "
                         f"list: {some(bad)}; expected {ANNOTATION}")
    repeated = sorted(i for i, n in Counter(r["id"] for r in records).items() if n > 1)
    if repeated:
        raise InputError(f"{path}: study id(s) listed more than once in {key!r}: {some(repeated)}")
    return records


def _open_i_reports(source: Path) -> Iterator[tuple[str, OpenIReport]]:
    """(uId, report) for every XML report of the folder or archive; a uId in two files is refused."""
    seen: dict[str, str] = {}
    count = 0
    for name, data in _xml_files(source):
        report = _parse(source, name, data)
        if report.uid in seen:
            raise InputError(f"{source}: report uId {report.uid} is in both {seen[report.uid]} and {name}")
        seen[report.uid] = name
        count += 1
        yield report.uid, report
    if not count:
        raise InputError(f"{source}: no .xml reports in it; expected {REPORTS}")


def _xml_files(source: Path) -> Iterator[tuple[str, bytes]]:
    if source.is_dir():
        folder = source / "ecgen-radiology" if (source / "ecgen-radiology").is_dir() else source
        for path in sorted(folder.glob("*.xml")):
            yield path.name, path.read_bytes()
        return
    try:
        with tarfile.open(source, "r:*") as archive:
            for member in archive:
                if member.isfile() and member.name.endswith(".xml"):
                    yield Path(member.name).name, archive.extractfile(member).read()
    except (tarfile.ReadError, *DAMAGED) as err:
        raise damaged(source, err, "NLMCXR_reports.tgz") from None


def _parse(source: Path, name: str, data: bytes) -> OpenIReport:
    try:
        root = ET.fromstring(data)
    except ET.ParseError as err:
        raise InputError(f"{source}: {name} is not well-formed XML ({err}); expected {REPORTS}") from None
    uid_element = root.find(".//uId")
    uid = uid_element.get("id") if uid_element is not None else None
    if not uid:
        stem = Path(name).stem
        if not stem.isdigit():
            raise InputError(f"{source}: {name} has no <uId id=...> (is it an Open-i report?); expected {REPORTS}")
        uid = f"CXR{stem}"  # Open-i names report n `n.xml` and gives it uId CXRn
    sections: dict[str, str] = {}
    for element in root.iter("AbstractText"):
        label, text = (element.get("Label") or "").upper(), "".join(element.itertext())
        if label and text.strip() and label not in sections:
            sections[label] = text
    return OpenIReport(uid, name, sections)
