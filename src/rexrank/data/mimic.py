"""MIMIC-CXR from PhysioNet's own files: the official split, the DICOM metadata and the free-text reports.

    build = read_mimic([Path("mimic-cxr-2.0.0-split.csv.gz"), Path("mimic-cxr-2.0.0-metadata.csv.gz"),
                        Path("mimic-cxr-reports/files")], "test", image_root=Path("mimic-cxr-jpg/2.0.0"))

A study of the split is in the test set when its report has a findings section (ReXrank's rule), the sections
being those MIMIC-CXR's `create_section_files.py` writes (`rexrank.data.mimic_sections`). Studies are named as
ReXrank names them, "50414267" (PhysioNet's report files say "s50414267"). Report text is never printed: problems
name the study and the file.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank.catalog import TEST_SETS
from rexrank.data import mimic_sections
from rexrank.data.build import Build, DatasetInfo, sha256
from rexrank.data.originals import DAMAGED
from rexrank.data.split import listing
from rexrank.errors import InputError

SPLIT_FILE = "mimic-cxr-2.0.0-split.csv.gz"
METADATA_FILE = "mimic-cxr-2.0.0-metadata.csv.gz"
REPORTS_ZIP = "mimic-cxr-reports.zip"
SPLIT_COLUMNS = ("dicom_id", "study_id", "subject_id", "split")
METADATA_COLUMNS = ("dicom_id", "study_id", "subject_id", "ViewPosition")  # the ones read; the file has more
SPLITS = ("train", "validate", "test")
HELP = (f"{SPLIT_FILE} (PhysioNet's split), optionally {METADATA_FILE} (view positions), and the reports: the "
        f"files/ folder of {REPORTS_ZIP} (or the folder above it, or the zip itself)")
# A report inside the zip or the tree: files/p10/p10000032/s50414267.txt
REPORT_NAME = re.compile(r"(?:^|/)p\d\d/p(\d+)/s(\d+)\.txt$")
SHOWN = 10  # ids named in a note


def read_mimic(sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    return read_originals(TEST_SETS["mimic-cxr"].info, sources, split, image_root)


def read_originals(info: DatasetInfo, sources: Sequence[Path], split: str, image_root: Path | None = None) -> Build:
    if split not in SPLITS:
        raise InputError(f"mimic-cxr: no split {split!r} in {SPLIT_FILE}; its splits are {', '.join(SPLITS)}")
    files = _sort_sources(sources)
    studies = _split_studies(files.split, split)
    views = _view_positions(files.metadata, {d for s in studies.values() for d in s.dicoms}) if files.metadata \
        else {}
    reports = files.reports

    rows, missing, custom, headerless, no_findings = [], [], [], [], []
    digest = hashlib.sha256()
    for study, raw in reports.read(studies.values()):
        if raw is None:
            missing.append(f"study {study.study_id} (subject {study.subject_id}): no {study.report_path}")
            continue
        digest.update(f"{study.report_path}\0{hashlib.sha256(raw).hexdigest()}\n".encode())
        text = _decode(raw, study, reports.name)
        if mimic_sections.in_custom_tables(study.study_id):  # mimic_cxr_sectioned.csv has no row for them
            custom.append(study.study_id)
            continue
        parts = mimic_sections.sections(text)
        row = mimic_sections.row(parts)
        if row["findings"] is None:
            (headerless if parts[0].name == "full report" else no_findings).append(study.study_id)
            continue
        dicoms = sorted(study.dicoms)
        rows.append({"study_id": study.study_id, "findings": row["findings"], "impression": row["impression"],
                     "image_paths": [study.image_path(d) for d in dicoms],
                     "views": [views.get(d) for d in dicoms], "context": _context(parts),
                     "source": study.report_path})
    if missing:
        why = (f"none is there: is {reports.path} the files/ folder of {REPORTS_ZIP}?" if len(missing) == len(studies)
               else "a partial download or extraction?")
        raise InputError(f"{reports.name}: the reports of {len(missing):,} {split} studies of {files.split.name} "
                         f"are missing ({why}):\n{listing(missing)}")

    total = len(studies)
    notes = []
    for ids, what in ((no_findings, "have no findings section"),
                      (headerless, "have a report with no section header MIMIC's parser recognises"),
                      (custom, "are in MIMIC-CXR's hand-made tables for reports its rules cannot section "
                               "(create_section_files.py writes no findings for them)")):
        if ids:
            notes.append(f"{len(ids):,} of the {total:,} {split} studies {what}; left out, as ReXrank scores only "
                         f"studies with findings: {_first(ids)}")
    if image_root is not None:
        notes += _missing_images(image_root, rows)
    frame = pd.DataFrame(rows, columns=["study_id", "findings", "impression", "image_paths", "views", "context",
                                        "source"])
    sources_digest = {files.split.name: sha256(files.split)}
    if files.metadata:
        sources_digest[files.metadata.name] = sha256(files.metadata)
    sources_digest[f"{reports.name}: the {total:,} {split} reports read"] = digest.hexdigest()
    return Build(info, split, frame, sources_digest, notes)


@dataclass
class Study:
    study_id: str  # "50414267"
    subject_id: str  # "10000032"
    dicoms: list[str] = field(default_factory=list)

    @property
    def folder(self) -> str:
        return f"files/p{self.subject_id[:2]}/p{self.subject_id}"

    @property
    def report_path(self) -> str:
        return f"{self.folder}/s{self.study_id}.txt"

    def image_path(self, dicom_id: str) -> str:
        """Where MIMIC-CXR-JPG keeps the image, relative to its root."""
        return f"{self.folder}/s{self.study_id}/{dicom_id}.jpg"


@dataclass
class Sources:
    split: Path
    metadata: Path | None
    reports: Reports


def _sort_sources(sources: Sequence[Path]) -> Sources:
    """Which source is which, by content: a CSV by its header, the reports by their layout."""
    found: dict[str, list] = {"split": [], "metadata": [], "reports": []}
    for path in sources:
        if path.is_dir() or path.suffix == ".zip" or zipfile.is_zipfile(path):
            found["reports"].append(Reports.open(path))
            continue
        header = _header(path)
        if header is not None and set(SPLIT_COLUMNS) <= set(header):
            found["split"].append(path)
        elif header is not None and set(METADATA_COLUMNS) <= set(header):
            found["metadata"].append(path)
        else:
            expected = (METADATA_FILE if "metadata" in path.name else SPLIT_FILE if "split" in path.name else
                        f"{SPLIT_FILE}, {METADATA_FILE}, the reports' files/ folder or {REPORTS_ZIP}")
            columns = (f"columns {', '.join(SPLIT_COLUMNS)}" if expected == SPLIT_FILE else
                       f"columns including {', '.join(METADATA_COLUMNS)}" if expected == METADATA_FILE else "")
            raise InputError(f"{path}: not a MIMIC-CXR source; expected {expected}"
                             f"{f' ({columns})' if columns else ''}. The sources are {HELP}")
    for kind, paths in found.items():
        if len(paths) > 1:
            names = ", ".join(str(getattr(p, "path", p)) for p in paths)
            raise InputError(f"mimic-cxr: more than one {kind} source given ({names}); give one of each: {HELP}")
    if not found["split"]:
        raise InputError(f"mimic-cxr: no {SPLIT_FILE} among the sources (the file with columns "
                         f"{', '.join(SPLIT_COLUMNS)}); give {HELP}")
    if not found["reports"]:
        raise InputError(f"mimic-cxr: no reports among the sources; give {HELP}")
    return Sources(found["split"][0], (found["metadata"] or [None])[0], found["reports"][0])


def _opened(path: Path) -> io.TextIOBase:
    """The file as text, through gzip when it is compressed (whatever its name says)."""
    with path.open("rb") as f:
        compressed = f.read(2) == b"\x1f\x8b"
    if compressed:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return path.open(encoding="utf-8", newline="")


def _csv_rows(path: Path) -> Iterator[dict]:
    try:
        with _opened(path) as text:
            yield from csv.DictReader(text)
    except DAMAGED as err:
        raise InputError(f"{path}: truncated or corrupt gzip file ({err}); download it again") from None
    except (UnicodeDecodeError, csv.Error) as err:
        raise InputError(f"{path}: not a readable CSV file ({err})") from None


def _header(path: Path) -> list[str] | None:
    try:
        with _opened(path) as text:
            return next(csv.reader(text), None)
    except DAMAGED as err:
        raise InputError(f"{path}: truncated or corrupt gzip file ({err}); download it again") from None
    except (UnicodeDecodeError, csv.Error):
        return None


def _split_studies(path: Path, split: str) -> dict[str, Study]:
    studies: dict[str, Study] = {}
    seen_splits: set[str] = set()
    bad = []
    for line, row in enumerate(_csv_rows(path), 2):
        seen_splits.add(row["split"] or "")
        if row["split"] != split:
            continue
        study_id, subject_id, dicom_id = row["study_id"], row["subject_id"], row["dicom_id"]
        if not (study_id or "").isdigit() or not (subject_id or "").isdigit() or not dicom_id:
            bad.append(f"line {line}: study_id {study_id!r}, subject_id {subject_id!r}, dicom_id {dicom_id!r}")
            continue
        study = studies.setdefault(study_id, Study(study_id, subject_id))
        if study.subject_id != subject_id:
            bad.append(f"line {line}: study {study_id} under subjects {study.subject_id} and {subject_id}")
        elif dicom_id not in study.dicoms:
            study.dicoms.append(dicom_id)
    if bad:
        raise InputError(f"{path}: rows that are not MIMIC-CXR ids:\n{listing(bad)}")
    if not studies:
        raise InputError(f"{path}: no study in split {split!r} (the file has {', '.join(sorted(seen_splits))})")
    return studies


def _view_positions(path: Path, dicoms: set[str]) -> dict[str, str | None]:
    return {row["dicom_id"]: (row["ViewPosition"] or None) for row in _csv_rows(path) if row["dicom_id"] in dicoms}


class Reports:
    """The free-text reports: the files/ tree of mimic-cxr-reports.zip, the folder above it, or the zip."""

    def __init__(self, path: Path, root: Path | None, members: dict[str, str] | None):
        self.path, self.name = path, path.name or str(path)
        self._root, self._members = root, members  # a folder of pXX folders, or study id -> zip member

    @classmethod
    def open(cls, path: Path) -> Reports:
        if path.is_dir():
            root = path / "files" if (path / "files").is_dir() else path
            if not any(child.is_dir() and re.fullmatch(r"p\d\d", child.name) for child in root.iterdir()):
                raise InputError(f"{path}: not the MIMIC-CXR reports folder; expected the files/ folder of "
                                 f"{REPORTS_ZIP} (files/p10/p10000032/s50414267.txt ...) or the folder above it")
            return cls(path, root, None)
        try:
            with zipfile.ZipFile(path) as archive:
                members = {m.group(2): name for name in archive.namelist() if (m := REPORT_NAME.search(name))}
        except (zipfile.BadZipFile, OSError) as err:
            raise InputError(f"{path}: not a readable zip file ({err}); download {REPORTS_ZIP} again") from None
        if not members:
            raise InputError(f"{path}: no reports (files/p10/p10000032/s50414267.txt ...) in this zip; expected "
                             f"{REPORTS_ZIP}")
        return cls(path, None, members)

    def read(self, studies: Iterable[Study]) -> Iterator[tuple[Study, bytes | None]]:
        """Each study's report file as bytes, None when it is not there (the zip opened once)."""
        if self._root is not None:
            for study in studies:
                report = self._root / study.report_path.removeprefix("files/")
                yield study, report.read_bytes() if report.is_file() else None
            return
        with zipfile.ZipFile(self.path) as archive:
            for study in studies:
                member = self._members.get(study.study_id)
                try:
                    yield study, None if member is None else archive.read(member)
                except (zipfile.BadZipFile, zlib.error, OSError) as err:
                    raise InputError(f"{self.path}: {member} cannot be read ({err}); download {REPORTS_ZIP} "
                                     "again") from None


def _decode(raw: bytes, study: Study, where: str) -> str:
    """As create_section_files.py reads a report: UTF-8 text with universal newlines ("\\r\\n" -> "\\n")."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{where}: the report of study {study.study_id} ({study.report_path}) is not UTF-8 text "
                         f"(byte {err.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _context(parts: list[mimic_sections.Section]) -> str | None:
    """The indication (else the history) the radiologist was given, its whitespace collapsed."""
    for name in ("indication", "history"):
        found = mimic_sections.last_section(parts, name)
        if found is not None and found.text.strip():
            return " ".join(found.text.split())
    return None


def _missing_images(image_root: Path, rows: list[dict]) -> list[str]:
    """Images of the built studies not found under the MIMIC-CXR-JPG root (a note, not an error)."""
    if not image_root.is_dir():
        raise InputError(f"--image-root {image_root}: no such folder (MIMIC-CXR-JPG's root, above files/)")
    base = image_root.parent if image_root.name == "files" and not (image_root / "files").is_dir() else image_root
    total, studies = 0, []
    for row in rows:
        gone = [p for p in row["image_paths"] if not (base / p).is_file()]
        total += len(gone)
        if gone:
            studies.append(row["study_id"])
    if not total:
        return []
    count = sum(len(r["image_paths"]) for r in rows)
    return [f"{total:,} of the {count:,} images of the built studies are not under {image_root} (MIMIC-CXR-JPG's "
            f"files/pXX/pSUBJECT/sSTUDY/DICOM.jpg); the studies: {_first(studies)}"]


def _first(ids: list[str]) -> str:
    return ", ".join(ids[:SHOWN]) + (f" ... ({len(ids) - SHOWN:,} more)" if len(ids) > SHOWN else "")
