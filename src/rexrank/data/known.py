"""The official splits, known by their study ids (`resources/splits/`): what a loaded split is, and what it is named.

A split is an official split when its study ids are exactly that split's, whatever its file is called; it is then
named after the dataset (`mimic-cxr`, `iu-xray`, `chexpert-plus`) and has that split's name (`test`, `valid`). The
rules for everything else (`resolve`):

- Ids that are some but not all of an official split's (a 100-study sample of MIMIC-CXR test), or an official
  split's with others added, are not that split: the result keeps the name it would have had (the file's, or
  `--dataset-name`'s) unless that name is an official dataset's, which would rank a sample beside the whole split;
  then it becomes `<dataset>-sample` (a subset) or `<dataset>-unofficial` (anything else). A note says what it is.
- `--dataset-name` naming an official dataset other than the one the ids are, or naming the dataset of which the
  ids are only a part, is refused. A name that is no official dataset's (`my-mimic-sample`) is the user's to choose.
- Ids that are no official split's at all (synthetic stand-ins, such as the demo's) may be named anything: the
  maintainers score a submission on their own copy of the split, where such predictions do not line up.
- The split's name comes from what the data says: `--split`, the records' own `split` field (ReXrank's files write
  `test`, and `val` for IU-Xray's validation set), a dataset folder's file names (`valid-00000-of-00001.parquet`)
  and the ids (a subset of an official split is still of that split). When two of these disagree the split is
  refused, naming both; when none says, it is `test`.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import TEST_SETS
from rexrank.errors import InputError

SPLITS_DIR = Path(__file__).resolve().parents[1] / "resources" / "splits"
# The splits rexrank ships the ids of: (dataset, split), every public test set's scored and other splits.
OFFICIAL = tuple((t.name, part) for t in TEST_SETS.values() if not t.private for part in (t.split, *t.other_splits))
# How sources spell a split -> rexrank's name (ReXrank's IU-Xray valid file says "val"; MIMIC-CXR "validate").
SPLIT_NAMES = {"test": "test", "valid": "valid", "val": "valid", "validate": "valid", "validation": "valid",
               "dev": "valid", "train": "train", "training": "train"}


def split_name(text: object) -> str | None:
    """rexrank's name for a split as a source spells it; None for no value (null, NaN, empty)."""
    if not isinstance(text, str) or not text.strip():
        return None
    key = text.strip().lower()
    return SPLIT_NAMES.get(key, key)


def official_ids(name: str, split: str) -> list[str] | None:
    """The study ids of an official split, when rexrank ships them (`resources/splits/<name>.<split>.txt`)."""
    path = SPLITS_DIR / f"{name}.{split}.txt"
    return path.read_text(encoding="utf-8").split() if path.is_file() else None


@functools.cache
def _id_set(name: str, split: str) -> frozenset[str]:
    return frozenset(official_ids(name, split) or ())


@dataclass(frozen=True)
class Match:
    """How a set of study ids stands to the official split it shares most with."""

    dataset: str  # "mimic-cxr"
    split: str  # "test"
    shared: int  # ids in both
    studies: int  # ids in the set
    official: int  # ids in the official split

    @property
    def exact(self) -> bool:
        return self.shared == self.studies == self.official

    @property
    def subset(self) -> bool:
        """Some of the official split's studies and nothing else (the whole split included: see `exact`)."""
        return self.shared == self.studies

    @property
    def title(self) -> str:
        return f"{TEST_SETS[self.dataset].title} {self.split}"

    def ids_are(self) -> str:
        """What the ids are, as the second half of a sentence."""
        if self.exact:
            return f"its study ids are the official {self.title} split's ({self.official:,})"
        if self.subset:
            return f"its study ids are {self.shared:,} of the {self.official:,} of the official {self.title} split"
        return f"{self.shared:,} of its {self.studies:,} study ids are in the official {self.title} split " \
               f"(of {self.official:,})"

    def describe(self) -> str:
        """What the split is, as a note's subject."""
        if self.exact:
            return f"the official {self.title} split ({self.official:,} studies)"
        if self.subset:
            return f"{self.shared:,} of the {self.official:,} studies of the official {self.title} split"
        return (f"{self.shared:,} of its {self.studies:,} studies are in the official {self.title} split "
                f"(of {self.official:,})")


def recognise(ids: Iterable[str]) -> Match | None:
    """The official split `ids` are, or else the one they share the most ids with; None when they share none."""
    ids = set(map(str, ids))
    best = None
    for name, part in OFFICIAL:
        official = _id_set(name, part)
        shared = len(ids & official)
        if shared and (best is None or (shared, -len(official)) > (best.shared, -best.official)):
            best = Match(name, part, shared, len(ids), len(official))
    return best


@dataclass(frozen=True)
class Identity:
    dataset: str
    split: str
    match: Match | None
    notes: tuple[str, ...] = ()  # what the user should know (a sample, a stand-in): warnings of the result


def resolve(source: str, ids: Sequence[str], *, asked_split: str | None = None, asked_name: str | None = None,
            derived_name: str, record_splits: Sequence[object] = (), file_split: str | None = None,
            stand_in: bool = False) -> Identity:
    """The dataset name and split of a loaded split (the module's rules). `asked_*`: what the caller (`--split`,
    `--dataset-name`) asked for; `derived_name`: the name its file or folder gives; `record_splits`: the records' own
    `split` values; `file_split`: the split its files are named by; `stand_in`: a known synthetic set (the demo),
    which gets no note for an official name. Raises InputError, one line naming both sides, on a contradiction."""
    match = recognise(ids)
    split = _split(source, match, asked_split, record_splits, file_split)
    notes: list[str] = []
    if asked_name is not None:
        name = asked_name
        if match is not None and asked_name in TEST_SETS and (asked_name != match.dataset or not match.exact):
            hint = (f": not that split (name a sample otherwise, e.g. --dataset-name {match.dataset}-sample)"
                    if asked_name == match.dataset else f" (leave --dataset-name out: it is {match.dataset})"
                    if match.exact else "")
            raise InputError(f"{source}: --dataset-name {asked_name}, but {match.ids_are()}{hint}")
    elif match is not None and match.exact:
        name = match.dataset
    elif match is not None and derived_name in TEST_SETS:
        name = f"{match.dataset}-{'sample' if match.subset else 'unofficial'}"
    else:
        name = derived_name
    if match is not None and not match.exact and name not in TEST_SETS:
        notes.append(f"{match.describe()}: not the official split, so named {name}, not {match.dataset} (the "
                     "leaderboard ranks the whole split; rexrank submit refuses a sample)")
    if (match is None and name in TEST_SETS and not stand_in and not TEST_SETS[name].private
            and _id_set(name, TEST_SETS[name].split)):
        notes.append(f"named {name}, but none of its {len(ids):,} study ids is in the official "
                     f"{TEST_SETS[name].title} {TEST_SETS[name].split} split: the leaderboard scores {name} on that "
                     "split, where these predictions will not line up")
    return Identity(name, split, match, tuple(notes))


def _split(source: str, match: Match | None, asked: str | None, record_splits: Sequence[object],
           file_split: str | None) -> str:
    said = Counter(s for s in map(split_name, record_splits) if s is not None)
    if len(said) > 1:
        counts = ", ".join(f"{s} ({n:,})" for s, n in said.most_common())
        raise InputError(f"{source}: its records name several splits in their split field: {counts}; a split file "
                         "holds one split")
    evidence: list[tuple[str, str]] = []
    if asked is not None:
        evidence.append((f"--split {asked}", split_name(asked) or asked))
    if said:
        (value,) = said
        evidence.append((f"its records say split {value!r}", value))
    if file_split is not None:
        evidence.append((f"its files are named for split {file_split!r}", split_name(file_split) or file_split))
    if match is not None and match.subset:
        evidence.append((match.ids_are(), match.split))
    for what, value in evidence[1:]:
        if value != evidence[0][1]:
            first = evidence[0][0]
            hint = f" (leave --split out, or pass --split {value})" if asked is not None else ""
            raise InputError(f"{source}: {first}, but {what}{hint}")
    return evidence[0][1] if evidence else "test"


# The demo's synthetic split in its two formats (rexrank.demo writes them; the data layer knows them by their files).
DEMO_SPLITS = tuple(Path(__file__).resolve().parents[1] / "demo" / name for name in ("dataset.jsonl", "split.json"))


def is_demo(source: str | Path) -> bool:
    """Whether a split was read from the demo's own file (either of its two formats). Its careful system copies
    reference sentences by design, so the rule against near-copies of the references (`rexrank.rules.copies`) does
    not apply to it."""
    return Path(source).resolve() in DEMO_SPLITS
