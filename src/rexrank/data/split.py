"""Loading a test split: a local folder of parquet, a ReXrank split JSON, or a Hub dataset id."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rexrank.data.known import Match, is_demo, resolve, split_name
from rexrank.errors import InputError
from rexrank.reports import TaskReferences, build_references

REQUIRED_COLUMNS = ("study_id", "findings", "impression")
ALL_STUDIES = "findings_impression"  # the config of a dataset built by rexrank that holds every study


def listing(problems: list[str], limit: int = 10) -> str:
    """Problems one per line, the first `limit` of them."""
    lines = [f"  - {p}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"  ... and {len(problems) - limit} more")
    return "\n".join(lines)


def read_json(path: Path, expected: str | None = None, data: bytes | None = None) -> object:
    """JSON as ReXrank and the releases write it: bare NaN accepted, a repeated key refused by name (json would keep
    the last silently). `data`: the file's bytes when already read (unzipped); `expected` names what the file should
    have been, for the message."""
    hint = f"; expected {expected}" if expected else ""

    def no_repeats(pairs: list[tuple[str, object]]) -> dict:
        seen: dict = {}
        for key, value in pairs:
            if key in seen:
                raise InputError(f"{path}: key {key!r} appears more than once (a study listed twice?)")
            seen[key] = value
        return seen

    return loads(path.read_bytes() if data is None else data, str(path), hint, object_pairs_hook=no_repeats)


def loads(data: bytes | str, where: str, hint: str = "", **options) -> object:
    """`json.loads`, with every way hostile JSON fails it (bad syntax, nesting past the recursion limit, integers past
    Python's 4,300 digits, bytes that are not UTF-8) an InputError naming `where`."""
    try:
        return json.loads(data, **options)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not valid JSON ({err}){hint}") from None
    except UnicodeDecodeError as err:
        raise InputError(f"{where}: not UTF-8 text ({err}){hint}") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read{hint}") from None
    except InputError:  # a hook's own refusal (a repeated key)
        raise
    except ValueError as err:  # an integer of more than 4,300 digits, and the like
        raise InputError(f"{where}: not valid JSON ({str(err)[:80]}){hint}") from None


def jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line."""
    try:
        with path.open(encoding="utf-8-sig") as lines:  # a byte order mark (a spreadsheet's "UTF-8") is no text
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                record = loads(line, f"{path}:{number}")
                if not isinstance(record, dict):
                    raise InputError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
                yield number, record
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not UTF-8 text: {err}") from None


@dataclass(frozen=True)
class Split:
    dataset: str
    split: str
    studies: pd.DataFrame  # study_id (str), findings, impression; one row per study, split order
    source: str
    match: Match | None = None  # the official split its study ids are, or share the most with (`rexrank.data.known`)
    notes: tuple[str, ...] = ()  # what the user should know about it (a sample of an official split, ...)

    def references(self, task: str) -> TaskReferences:
        return build_references(self.studies[list(REQUIRED_COLUMNS)].itertuples(index=False, name=None), task)


def load_split(source: str | os.PathLike, split: str | None = None, dataset: str | None = None) -> Split:
    """A split from a local parquet folder/file, a ReXrank split JSON, or a Hub dataset `ORG/NAME`.

    Its name and split come from what it is (`rexrank.data.known`): a split whose study ids are an official split's
    is that dataset and split whatever its file is called. `split` and `dataset` (`--split`, `--dataset-name`) are
    checked against the records' own `split` field, the folder's file names and the ids: a contradiction is an
    InputError naming both. `split` None: the split the data says, else test."""
    path = Path(source)
    file_split = None
    if path.is_dir():
        frame, file_split = _read_parquet_folder(path, split)
    elif path.suffix == ".parquet" and path.is_file():
        frame = read_parquet(path)
    elif path.suffix == ".json" and path.is_file():
        frame = _read_rexrank_json(path)
    elif path.suffix == ".jsonl" and path.is_file():
        frame = _read_jsonl(path)
    elif path.exists():
        raise InputError(f"{path}: expected a folder of parquet files, a .parquet or .jsonl file, "
                         "or a ReXrank split .json")
    elif (str(source).count("/") == 1 and not str(source).startswith((".", "/"))
          and path.suffix not in (".json", ".jsonl", ".parquet")):
        frame = _read_hub(str(source), split or "test")
    else:
        raise InputError(f"{source}: no such file or folder (and not a Hub dataset id ORG/NAME)")
    studies = _checked(frame, str(source))
    records = frame["split"].tolist() if "split" in frame.columns else []
    known = resolve(str(source), studies["study_id"].tolist(), asked_split=split, asked_name=dataset,
                    derived_name=_dataset_name(path), record_splits=records, file_split=file_split,
                    stand_in=is_demo(source))
    return Split(known.dataset, known.split, studies, str(source), known.match, known.notes)


def _dataset_name(path: Path) -> str:
    return (path.name if path.is_dir() else path.stem) or str(path)


def _read_parquet_folder(folder: Path, split: str | None) -> tuple[pd.DataFrame, str | None]:
    """The folder's table, and the split its files are named for (None when their names say none)."""
    if (folder / ALL_STUDIES).is_dir() and (folder / "build_info.json").is_file():  # built by rexrank
        folder = folder / ALL_STUDIES  # each task drops its own studies, and says how many
    files = sorted(f for f in folder.rglob("*.parquet") if not f.is_dir())  # a partitioned table: its files
    if not files:
        raise InputError(f"{folder}: no parquet files in this folder")
    # A Hub dataset names its files `<split>-*.parquet` or `<split>.parquet` (datasets' convention).
    groups = sorted({f.stem.split("-")[0] for f in files})
    wanted = split or ("test" if "test" in groups else None)
    named = [f for f in files if wanted and (f.stem == wanted or f.stem.startswith(f"{wanted}-"))]
    if named:
        files = named
    elif len(groups) > 1:
        chosen = f"none named {split!r}" if split else f"none named 'test' ({', '.join(groups)})"
        raise InputError(f"{folder}: several splits here and {chosen}; pass --split")
    stem = files[0].stem.split("-")[0]
    said = stem if split_name(stem) in ("test", "valid", "train") else None  # file names that name a split
    return pd.concat([read_parquet(f) for f in files], ignore_index=True), said


def read_parquet(path: Path) -> pd.DataFrame:
    """One parquet file of a split, or an InputError naming it. A symbolic link is followed: a folder may keep its
    files on a data drive, and a Hub snapshot in the HF cache is links into its blobs; and whatever it reaches, the
    file is only read as parquet, with the user's own rights. But it must reach a regular file: a device or a pipe
    (/dev/zero, a FIFO) never ends, and is refused before it is opened."""
    where = f"{path} (a link to {os.path.realpath(path)})" if path.is_symlink() else str(path)
    try:
        mode = path.stat().st_mode
    except OSError as err:  # a dangling link, a folder we may not enter
        raise InputError(f"{where}: cannot be read ({err.strerror or err})") from None
    if not stat.S_ISREG(mode):
        raise InputError(f"{where}: not a regular file (a device, a pipe or a socket); a split's parquet must be a "
                         "file")
    import pyarrow

    try:
        return pd.read_parquet(path)
    except (OSError, ValueError, pyarrow.ArrowException) as err:  # not parquet, torn, unreadable
        reason = str(err).split("': ", 1)[-1] if "Parquet input source" in str(err) else str(err)
        raise InputError(f"{where}: not a readable parquet file ({reason[:160]})") from None


def _read_rexrank_json(path: Path) -> pd.DataFrame:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object {{study_id: record}} (the ReXrank split format)")
    rows, fields = [], set()
    for study_id, record in data.items():
        if not isinstance(record, dict):
            raise InputError(f"{path}: study {study_id}: expected a record object, got {type(record).__name__}")
        rows.append((study_id, record.get("section_findings"), record.get("section_impression"), record.get("split")))
        fields.update(map(str, record))
    if rows and not fields & {"section_findings", "section_impression"}:
        raise InputError(f"{path}: no study has section_findings or section_impression, the fields a ReXrank split "
                         f"holds its reports in (found: {', '.join(sorted(fields)[:10]) or 'none'})")
    return pd.DataFrame(rows, columns=[*REQUIRED_COLUMNS, "split"], dtype=object)


def _read_jsonl(path: Path) -> pd.DataFrame:
    return pd.DataFrame([record for _, record in jsonl_records(path)], dtype=object)


def _read_hub(repo_id: str, split: str) -> pd.DataFrame:
    import datasets  # heavy; only a Hub source needs it

    try:
        try:
            return datasets.load_dataset(repo_id, ALL_STUDIES, split=split).to_pandas()
        except ValueError as err:  # a dataset not built by rexrank: its default config
            if f"BuilderConfig '{ALL_STUDIES}' not found" not in str(err):
                raise
            return datasets.load_dataset(repo_id, split=split).to_pandas()
    except Exception as err:  # the Hub's errors are many; name the dataset and the cause
        raise InputError(f"{repo_id}: could not load split {split!r} from the Hub: {err}") from err


def _checked(frame: pd.DataFrame, source: str) -> pd.DataFrame:
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}; "
                         f"a split needs {', '.join(REQUIRED_COLUMNS)}")
    frame = frame.copy()
    frame["study_id"] = frame["study_id"].astype(str)
    repeated = frame["study_id"][frame["study_id"].duplicated()].unique().tolist()
    if repeated:
        raise InputError(f"{source}: study id(s) appear more than once in the split: {', '.join(repeated[:10])}")
    for column in ("findings", "impression"):
        frame[column] = frame[column].astype(object).where(frame[column].notna(), None)
    return frame.reset_index(drop=True)
