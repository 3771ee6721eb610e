"""Writes each dataset folder (`python dataset_scripts/readmes.py`), one per builder of rexrank.builders: its
README.md from what rexrank.data says of the dataset (its card's words, the files each reader takes, the official split
sizes) and its build.py, the build entry. Generated so that it cannot drift from the builder, and so that a new test
set of the catalog gets its folder from this command: tests/data/test_dataset_scripts.py fails when a folder's files
are not what this writes."""

from __future__ import annotations

import sys
from pathlib import Path

from rexrank.builders import BUILDERS
from rexrank.catalog import TEST_SETS
from rexrank.data.build import official_ids

HERE = Path(__file__).parent


def readme(name: str) -> str:
    chosen = BUILDERS[name]
    d, report_set = chosen.info, name in TEST_SETS
    if report_set:
        sets = TEST_SETS[name]
        splits = {sets.split: sets.studies, **sets.other_splits}
        sizes = "\n".join(f"| {split} | {n:,} |" for split, n in splits.items())
        table = f"| split | studies |\n|---|---:|\n{sizes}\n"
        written = ("one config per ReXrank task, `findings` and `findings_impression` (ReXrank's `Findings: ... "
                   "Impression: ...` reference), each `<config>/<split>-00000-of-00001.parquet`, its references "
                   "with their whitespace collapsed as the leaderboard scored them")
    else:
        table = ""
        written = getattr(chosen, "written", "one config per source and task, each "
                                              "`<config>/<split>-00000-of-00001.parquet`")
        table = getattr(chosen, "sizes", "")
    sources = [f"- the original release: {chosen.originals_help}"] if chosen.originals_help else []
    if chosen.rexrank_file:
        sources.insert(0, f"- ReXrank's split JSON, `{chosen.rexrank_file}` (from the ReXrank authors), or")
    private = ("private (credentialed data: never public)" if chosen.always_private or d.credentialed
               else "private unless you pass `--public` (its licence allows a public copy)")
    official = report_set and official_ids(name, chosen.default_split) is not None  # rexrank ships its study ids
    ids = " and the study ids that differ from the official split" if official else ""
    return f"""# {d.title}

{d.description}

{table}
## What you need

Your own copy of the source; rexrank ships no report text. Homepage: {d.homepage}

{chr(10).join(sources)}

## Build

```bash
python dataset_scripts/{name}/build.py --source PATH [--source PATH ...] --out datasets/{name} \\
    [--split SPLIT] [--image-root DIR] [--push-to ORG/NAME]
```

The same as `rexrank build-dataset {name} ...` (`--help` lists every option). It writes the folder whole or not at
all:

- {written};
- `README.md`: the Hub dataset card (counts, columns, terms, citation);
- `build_info.json`: the sha256 of every source file{ids}.

`--push-to` uploads it to a Hub dataset repo, {private}.

## Licence and access

Licence on the Hub: `{d.licence}`. {d.access}

## Citation

```bibtex
{d.citation.strip()}
```
"""


# Each folder's build.py: `rexrank build-dataset NAME`, run as a script.
BUILD_ENTRY = '''\
"""Build this folder's dataset from your own download (README.md: which files, what it writes). The same as
`rexrank build-dataset {name} ...`: `python dataset_scripts/{name}/build.py --help`."""

import sys

from rexrank.cli import main

if __name__ == "__main__":
    sys.exit(main(["build-dataset", "{name}", *sys.argv[1:]]))
'''


def build_entry(name: str) -> str:
    return BUILD_ENTRY.format(name=name)


def main() -> int:
    for name in BUILDERS:
        (HERE / name).mkdir(exist_ok=True)
        (HERE / name / "README.md").write_text(readme(name), encoding="utf-8")
        (HERE / name / "build.py").write_text(build_entry(name), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
