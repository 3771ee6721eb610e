"""Building a test set as a Hub dataset: parquet files per task config, a dataset card, checksums and counts.

    build = read_rexrank_json(info, Path("ReXRank_MIMICCXR_test.json"), split="test")
    folder = write_dataset(build, Path("mimic-cxr"))          # load_dataset(folder, "findings", split="test")
    push_dataset(folder, "my-org/mimic-cxr-test")            # private; load_dataset("my-org/...", "findings")

A built dataset has one row per study (`COLUMNS`) and two configs, one per ReXrank task: `findings` (studies with
a findings section) and `findings_impression` (every study with either section), each holding both tasks' reference
texts as `reference_<task>`, whitespace collapsed as the board scored them (`rexrank.reports.reference_text`).
`build_info.json` records the source files' sha256, the counts, and how they compare with the official split
(`OFFICIAL`): a build that differs names the studies missing or extra.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rexrank import __version__
from rexrank.catalog import (
    TEST_SETS,
    DatasetInfo,  # noqa: F401  (the cards' shape, re-exported)
)
from rexrank.data.known import official_ids
from rexrank.data.split import listing, read_json
from rexrank.errors import InputError
from rexrank.reports import FINDINGS, FINDINGS_IMPRESSION, REFERENCE_TEXT, TASKS, build_references, section

# One row per study. `image_paths` relative to the dataset's image root; `views` parallel to it (AP, PA, LATERAL...,
# None where the source does not say).
COLUMNS = ("study_id", "findings", "impression", "reference_findings", "reference_findings_impression",
           "image_paths", "views", "context", "source")
# Study counts of the official splits (docs/metrics.md §10).
OFFICIAL = {(t.name, split): n for t in TEST_SETS.values()
            for split, n in ((t.split, t.studies), *t.other_splits.items())}


@dataclass
class Build:
    info: DatasetInfo
    split: str
    studies: pd.DataFrame  # study_id, findings, impression, image_paths, views, context, source
    sources: dict[str, str] = field(default_factory=dict)  # source file name -> sha256
    notes: list[str] = field(default_factory=list)  # what the build noticed (missing images, sections not found)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def compare_with_official(name: str, split: str, study_ids: Sequence[str]) -> dict:
    """Counts against the official split; the ids missing or extra when rexrank knows the official ids."""
    expected = OFFICIAL.get((name, split))
    report: dict = {"studies": len(study_ids), "official": expected}
    ids = official_ids(name, split)
    if ids is not None:
        have, want = set(study_ids), set(ids)
        report["missing"] = [i for i in ids if i not in have]
        report["extra"] = [i for i in study_ids if i not in want]
    report["matches"] = expected is None or (len(study_ids) == expected and not report.get("missing")
                                             and not report.get("extra"))
    return report


def _checked(build: Build) -> pd.DataFrame:
    frame = build.studies.copy()
    missing = [c for c in ("study_id", "findings", "impression") if c not in frame.columns]
    if missing:
        raise InputError(f"{build.info.name}: the builder gave no {', '.join(missing)} column")
    frame["study_id"] = frame["study_id"].astype(str)
    repeated = frame["study_id"][frame["study_id"].duplicated()].unique().tolist()
    if repeated:
        raise InputError(f"{build.info.name}: study id(s) appear more than once in the source:\n{listing(repeated)}")
    for column in ("findings", "impression"):
        frame[column] = [section(v) for v in frame[column]]
    for column, empty in (("image_paths", list), ("views", list), ("context", lambda: None),
                          ("source", lambda: build.info.name)):
        if column not in frame.columns:
            frame[column] = [empty() for _ in range(len(frame))]
    for task in TASKS:
        refs = build_references(frame[["study_id", "findings", "impression"]].itertuples(index=False, name=None),
                                task).references
        frame[f"reference_{task}"] = [refs.get(i) for i in frame["study_id"]]
    return frame[list(COLUMNS)].reset_index(drop=True)


def write_dataset(build: Build, out: str | os.PathLike) -> Path:
    """The dataset folder: `<config>/<split>-00000-of-00001.parquet` per task, README.md, build_info.json.
    Written beside `out` and moved into place whole, so a failed build leaves no half dataset."""
    out = Path(out)
    frame = _checked(build)
    configs = {FINDINGS: frame[frame["reference_findings"].notna()], FINDINGS_IMPRESSION:
               frame[frame["reference_findings_impression"].notna()]}
    check = compare_with_official(build.info.name, build.split, frame["study_id"].tolist())
    info = {"rexrank": __version__, "dataset": build.info.name, "split": build.split, "sources": build.sources,
            "counts": {"studies": len(frame), **{task: len(rows) for task, rows in configs.items()},
                       "without_findings": int(frame["findings"].isna().sum()),
                       "without_impression": int(frame["impression"].isna().sum())},
            "official": check, "notes": build.notes}

    def fill(staging: Path) -> None:
        for task, rows in configs.items():
            (staging / task).mkdir()
            rows.reset_index(drop=True).to_parquet(staging / task / f"{build.split}-00000-of-00001.parquet",
                                                   index=False)
        (staging / "build_info.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        (staging / "README.md").write_text(card(build, info), encoding="utf-8")

    return replace_folder(out, fill)


def replace_folder(out: Path, fill: Callable[[Path], None]) -> Path:
    """`fill` a staging folder beside `out`, then move it into place whole, so a failed build leaves no half
    dataset. An existing `out` is replaced only when it is a rexrank dataset folder (it has build_info.json)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        fill(staging)
        if out.exists():
            if not (out / "build_info.json").is_file():
                raise InputError(f"{out}: exists and is not a rexrank dataset folder; choose another --out")
            shutil.rmtree(out)
        staging.rename(out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def front_matter(d: DatasetInfo, tags: Sequence[str], configs: Sequence[str], split: str,
                 default: str | None = None) -> list[str]:
    """A card's YAML header lines: licence, tags, one config per `<config>/<split>-*.parquet`, the gating prompt."""
    yaml = ["---", f"pretty_name: {d.title}", f"license: {d.licence}", "language:", "- en", "tags:",
            *(f"- {tag}" for tag in tags), "configs:"]
    for name in configs:
        yaml += [f"- config_name: {name}", "  data_files:", f"  - split: {split}",
                 f"    path: {name}/{split}-*.parquet"]
        if name == default:
            yaml.append("  default: true")
    if d.credentialed:
        yaml += ["extra_gated_prompt: >-", f"  {d.access}"]
    yaml.append("---")
    return yaml


def card(build: Build, info: dict) -> str:
    """README.md: YAML front matter (licence, gating, one config per task) and the card text."""
    d, counts, split = build.info, info["counts"], build.split
    yaml = front_matter(d, ("radiology", "chest-x-ray", "report-generation", "rexrank"), TASKS, split,
                        default=FINDINGS_IMPRESSION)
    official = info["official"]
    differs = "" if official["matches"] else (
        f"\n**This build differs from the official split** ({official['official']:,} studies): "
        f"{len(official.get('missing', []))} missing, {len(official.get('extra', []))} extra; see build_info.json.\n")
    body = f"""
# {d.title}: the {split} split, for rexrank

{d.description}

Built by `rexrank build-dataset {d.name}` (rexrank {info['rexrank']}) from the user's own copy of the source; the
sections are the source's text, unchanged, and the references are made from them as the leaderboard scores them.
Homepage: {d.homepage}
{differs}
## Counts

| | studies |
|---|---:|
| {split} split | {counts['studies']:,} |
| config `findings` (studies with a findings section) | {counts[FINDINGS]:,} |
| config `findings_impression` (studies with either section) | {counts[FINDINGS_IMPRESSION]:,} |
| without findings / without impression | {counts['without_findings']:,} / {counts['without_impression']:,} |

## Columns

- `study_id`: the source's study id (string).
- `findings`, `impression`: the report's sections, null where the report has none.
- `reference_findings`: the findings task's ground truth (the findings section), null where it has none (the
  task leaves the study out, as the leaderboard's findings rows do).
- `reference_findings_impression`: ReXrank's findings+impression ground truth,
  `Findings: {{findings}} Impression: {{impression}}`, a missing section written `None` as ReXrank's script does.
- Both references have their whitespace collapsed (every run of spaces, tabs and line breaks to one space, the
  ends stripped), as the leaderboard's references were: a line break left in would be part of a word for BLEU-2.
  Scores made on them are signed `refs:{REFERENCE_TEXT}`.
- `image_paths`: the study's images, relative to the image root of the source; `views`: their view positions.
- `context`: indication / clinical history where the source has it; `source`: where the row came from.

```python
from datasets import load_dataset
studies = load_dataset("PATH_OR_ORG/NAME", "findings", split="{split}")
```

## Licence and access

{d.access}

## Citation

```bibtex
{d.citation.strip()}
```
"""
    return "\n".join(yaml) + "\n" + body


def push_dataset(folder: str | os.PathLike, repo_id: str, private: bool = True, token: str | None = None) -> str:
    """Upload a built dataset folder to a Hub dataset repo (created private unless asked otherwise); its URL."""
    from huggingface_hub import HfApi

    folder = Path(folder)
    info = json.loads((folder / "build_info.json").read_text(encoding="utf-8"))
    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    counts = info["counts"]
    unit = "studies" if "studies" in counts else "items"  # report test sets count studies, RadRBench-CXR items
    commit = api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                               commit_message=f"rexrank build-dataset {info['dataset']} ({info['split']}, "
                                              f"{counts[unit]:,} {unit})")
    return commit.commit_url if hasattr(commit, "commit_url") else str(commit)


def read_rexrank_json(info: DatasetInfo, path: Path, split: str) -> Build:
    """A ReXrank split file (`{study_id: {section_findings, section_impression, image_path, context, ...}}`)."""
    data = read_json(path)
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: expected ReXrank's split JSON, an object {{study_id: record}}")
    rows, bad = [], []
    for study_id, record in data.items():
        if not isinstance(record, dict) or not {"section_findings", "section_impression"} <= set(record):
            bad.append(f"study {study_id}: no section_findings/section_impression fields")
            continue
        images = record.get("image_path") or []
        images = [images] if isinstance(images, str) else list(images)
        context = record.get("context")
        rows.append({"study_id": study_id, "findings": record["section_findings"],
                     "impression": record["section_impression"], "image_paths": images,
                     "views": [None] * len(images), "context": section(context) if isinstance(context, str) else None,
                     "source": path.name})
    if bad:
        raise InputError(f"{path}: not a ReXrank split file for {info.name}:\n{listing(bad)}")
    return Build(info, split, pd.DataFrame(rows), {path.name: sha256(path)})
