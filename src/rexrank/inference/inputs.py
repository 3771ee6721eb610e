"""The input a submitted model gets: ReXrank's split JSON without any reference text.

`{study_id: {"image_path": [...], "key_image_path": ..., "frontal_lateral": [...], "context": ..., "split": ...}}`,
the studies of one task in the split's order. Image paths are relative to the image root, which the script gets
with a trailing slash (`--img_root_dir /images/`): ReXrank's MedVersa example joins the two by string
concatenation, its MedGemma example by `os.path.join`. The leading slash of ReXrank's MIMIC-CXR paths is dropped
(`image_relative`), so both joins reach the image; a path that leaves the image folder is refused.
Only the fields in INPUT_FIELDS are copied, so a field holding a report (`report`, `section_findings`,
`section_impression`, or any the split may add) never reaches the script.
"""

from __future__ import annotations

import json
import posixpath
from pathlib import Path

from rexrank.data import load_split
from rexrank.data.split import read_json
from rexrank.errors import InputError
from rexrank.text import shown

INPUT_FIELDS = ("image_path", "key_image_path", "frontal_lateral", "context", "split")
FRONTAL = {"PA", "AP", "FRONTAL", "AP AXIAL", "PA LLD", "AP LLD"}


def input_records(source: str | Path, task: str, split: str | None = None) -> dict[str, dict]:
    """The model's input for `task` from a split (a ReXrank split JSON, a rexrank-built folder, a Hub dataset);
    `split` None: the one the data says (`rexrank.data.split.load_split`)."""
    studies = load_split(source, split)
    wanted = set(studies.references(task).references)
    path = Path(source)
    if path.suffix == ".json" and path.is_file():
        raw = read_json(path)
        records = {str(sid): _copied(record) for sid, record in raw.items() if str(sid) in wanted}
    else:
        frame = studies.studies
        if "image_paths" not in frame.columns:
            raise InputError(f"{source}: no image_paths column: a split to run a model on names each study's images "
                             "(a rexrank build, or ReXrank's split JSON)")
        records = {row["study_id"]: _from_build(row, studies.split) for row in frame.to_dict("records")
                   if row["study_id"] in wanted}
    empty = [sid for sid, record in records.items() if not record["image_path"]]
    if empty:
        raise InputError(f"{source}: {len(empty)} studies name no image (first: {empty[0]}): a model cannot be run "
                         "on them")
    return {sid: _under_root(source, sid, record) for sid, record in records.items()}


QUESTION_FIELDS = ("question_id", "study_id", "question", "options", "image_paths")


def question_records(questions, split: str, source: str = "questions") -> dict[str, dict]:
    """The VQA input (ReXrank's `vqa_prediction.json` layout without its answers): `{question_id: {"question",
    "options" ["A. ...", ...], "image_path" [...], "key_image_path", "study_id", "split"}}` from a table of
    questions (`rexrank.vqa.dataset.load_questions`: one row each, QUESTION_FIELDS among its columns); only these
    fields, so the correct answer, the category and the report never reach the script."""
    missing = [c for c in QUESTION_FIELDS if c not in questions.columns]
    if missing:
        raise InputError(f"{source}: no {', '.join(missing)} column: not ReXVQA's questions as rexrank builds them")
    records = {}
    for row in questions.to_dict("records"):
        images = [_from_metadata(str(p)) for p in (row["image_paths"] if row["image_paths"] is not None else [])]
        records[str(row["question_id"])] = {
            "question": str(row["question"]), "options": [str(o) for o in row["options"]], "image_path": images,
            "key_image_path": images[0] if images else None, "study_id": str(row["study_id"]), "split": split}
    empty = [qid for qid, record in records.items() if not record["image_path"]]
    if empty:
        raise InputError(f"{source}: {len(empty)} questions name no image (first: {empty[0]}): a model cannot be "
                         "run on them")
    return {qid: _under_root(source, qid, record) for qid, record in records.items()}


def _from_metadata(path: str) -> str:
    """A ReXVQA image path as under the image root: its metadata writes them from its `metadata/` folder
    (`../deid_png/<study>/<image>.png`), so the leading `../` (and `./`) segments name the root itself."""
    while path.startswith(("../", "./")):
        path = path.split("/", 1)[1]
    return path


def _under_root(source: str | Path, study: str, record: dict) -> dict:
    """The record with its image paths as paths under the image root, which both of ReXrank's examples' joins
    (`img_root_dir + path`, `os.path.join(img_root_dir, path)`) reach; InputError naming one that leaves it."""
    out = dict(record)
    for field in ("image_path", "key_image_path"):
        paths = record.get(field)
        named = [paths] if isinstance(paths, str) else paths or []
        relative = [image_relative(p) for p in named]
        if None in relative:
            bad = named[relative.index(None)]
            raise InputError(f"{source}: study {study}: image path {shown(bad, 200)!r} leaves the image folder: "
                             "each path names a file under --image-root")
        if paths is not None:
            out[field] = relative[0] if isinstance(paths, str) else relative
    return out


def _copied(record: dict) -> dict:
    out = {k: record[k] for k in INPUT_FIELDS if k in record and _plain(record[k])}
    images = out.get("image_path")
    out["image_path"] = [str(p) for p in images] if isinstance(images, list) else []
    return out


def _plain(value: object) -> bool:
    """A value as ReXrank's JSON holds it: text, a list of text, or nothing (its bare NaN is left out)."""
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _from_build(row: dict, split: str) -> dict:
    images = [str(p) for p in (row.get("image_paths") if row.get("image_paths") is not None else [])]
    views = [None if v is None else str(v) for v in (row.get("views") if row.get("views") is not None else [])]
    frontal = [str(v).upper() in FRONTAL if v is not None else None for v in views]
    record = {"image_path": images,
              "key_image_path": next((p for p, f in zip(images, frontal) if f), images[0] if images else None),
              "split": split}
    if views and all(f is not None for f in frontal) and len(views) == len(images):
        record["frontal_lateral"] = ["Frontal" if f else "Lateral" for f in frontal]
    if isinstance(row.get("context"), str):
        record["context"] = row["context"]
    return {k: v for k, v in record.items() if v is not None}


def image_relative(path: str) -> str | None:
    """`path` as the file under the image root it names, None where it leaves the root (`..` past it). ReXrank's
    MIMIC-CXR split writes `/p10/p10000032/s5.../<dicom>.jpg`, relative to MIMIC-CXR-JPG's `files/` (its MedVersa
    example joins `img_root_dir + image_path`, the root without a trailing slash); IU-Xray's and CheXpert Plus's are
    relative (`CXR1_IM-0001/0.png`, `valid/patient1/study1/view1_frontal.png`). A leading slash is the root's."""
    relative = posixpath.normpath(path.lstrip("/"))
    if relative in (".", "..") or relative.startswith("../") or "\0" in relative:
        return None
    return relative


def write_input(records: dict[str, dict], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
