"""Which reader turns each source format of a dataset into a build (`rexrank build-dataset`): the report test sets'
(`rexrank.data`), RadRBench-CXR's (`rexrank.radrbench.dataset`) and ReXVQA's (`rexrank.vqa.dataset`), above them.
What each set is (its split, size, card, credentialing) is `rexrank.catalog`'s, stated once there.

Each dataset can be built from ReXrank's split JSON (what the ReXrank authors distribute) or from the original
release in its own layout (read by a module of its own in `rexrank.data`). Sources are the user's downloads;
nothing here ships report text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import TEST_SETS
from rexrank.data import chexpert_plus, iu_xray, mimic, rexgradient
from rexrank.data.build import Build, DatasetInfo, read_rexrank_json, write_dataset
from rexrank.errors import InputError
from rexrank.radrbench import dataset as radrbench
from rexrank.vqa import dataset as rexvqa

Reader = Callable[[Sequence[Path], str, "Path | None"], Build]  # (sources, split, image root) -> Build


@dataclass(frozen=True)
class Builder:
    info: DatasetInfo
    default_split: str
    originals: Reader | None = None  # the original release's layout; None until a reader exists
    originals_help: str = ""  # which files the original layout needs, for the CLI's help and errors
    always_private: bool = False
    rexrank_file: str = ""  # ReXrank's split JSON for the default split, where the ReXrank authors publish one

    def read(self, sources: Sequence[Path], split: str | None = None, image_root: Path | None = None) -> Build:
        split = split or self.default_split
        missing = [str(p) for p in sources if not p.exists()]
        if missing:
            raise InputError(f"{self.info.name}: no such source: {', '.join(missing)}")
        if len(sources) == 1 and sources[0].suffix == ".json" and _is_rexrank_split(sources[0]):
            return read_rexrank_json(self.info, sources[0], split)
        if self.originals is None:
            raise InputError(f"{self.info.name}: give ReXrank's split JSON as --source (building from the original "
                             "release is not supported yet)")
        return self.originals(sources, split, image_root)

    def write(self, build: Build, out: str | Path) -> Path:
        return write_dataset(build, out)

    def summary(self, info: dict, folder: Path) -> str:
        """One line on what was built (the CLI prints it)."""
        counts = info["counts"]
        return (f"{self.info.name} {info['split']}: {counts['studies']:,} studies ({counts['findings']:,} with "
                f"findings, {counts['findings_impression']:,} in findings_impression) -> {folder}")


def _is_rexrank_split(path: Path) -> bool:
    """A ReXrank split file starts `{"<study id>": {` ... with section_findings in its first record."""
    with path.open(encoding="utf-8", errors="replace") as f:
        head = f.read(1 << 16)
    return head.lstrip().startswith("{") and "section_findings" in head


def _builder(name: str, reader: Reader | None = None, help_text: str = "") -> Builder:
    test_set = TEST_SETS[name]
    return Builder(test_set.info, test_set.split, originals=reader, originals_help=help_text,
                   always_private=test_set.private, rexrank_file=test_set.rexrank_file)


# The readers of each original release's own layout; a test set without one builds from ReXrank's split JSON.
ORIGINALS: dict[str, tuple[Reader, str]] = {
    "mimic-cxr": (mimic.read_mimic, mimic.HELP),
    "iu-xray": (iu_xray.read_iu_xray, iu_xray.HELP),
    "chexpert-plus": (chexpert_plus.read_chexpert_plus, chexpert_plus.HELP),
    "rexgradient": (rexgradient.read_rexgradient, rexgradient.HELP),
}
# Every test set of the catalog builds (a new one with no line above builds from ReXrank's JSON alone).
BUILDERS: dict[str, Builder] = {name: _builder(name, *ORIGINALS.get(name, ())) for name in TEST_SETS}
BUILDERS[radrbench.NAME] = radrbench.BUILDER  # items, not studies: its own reader, writer and card
BUILDERS[rexvqa.NAME] = rexvqa.BUILDER  # questions, known by question id: the Hub's own metadata files


def builder(name: str) -> Builder:
    if name not in BUILDERS:
        raise InputError(f"unknown dataset {name!r}: rexrank builds {', '.join(BUILDERS)}")
    return BUILDERS[name]
