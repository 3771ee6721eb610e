"""What a loaded split is, for the data-use guard: decided by the data, not by its file name.

Credentialed when any sign says so: a rexrank build's own metadata (`build_info.json` names the dataset it was built
as), study ids of an official credentialed split (MIMIC-CXR test, CheXpert Plus valid: one is enough), or a name or
Hub id naming such a set. Public only when a sign says so and none says otherwise: the synthetic demo set, a rexrank
build of a public dataset (IU-Xray), or a split whose every study id is one of IU-Xray's official ids. Anything else
is of unknown origin, and the guard treats it as not public.
"""

from __future__ import annotations

import json
from pathlib import Path

from rexrank.catalog import TEST_SETS
from rexrank.data.known import is_demo, official_ids
from rexrank.data.split import Split
from rexrank.llm.guard import DataUse, credentialed

# The official splits whose ids rexrank ships (`resources/splits/`), and whether their text is public.
OFFICIAL_SPLITS = {(t.name, split): not t.credentialed for t in TEST_SETS.values()
                   for split in (t.split, *t.other_splits) if not t.private}


def built_as(source: str) -> str | None:
    """The dataset a rexrank build says it is (its `build_info.json`), for a local folder or a Hub dataset id."""
    path = Path(source)
    info = path / "build_info.json" if path.is_dir() else None
    if info is None and not path.exists() and str(source).count("/") == 1:
        try:
            from huggingface_hub import hf_hub_download

            info = Path(hf_hub_download(str(source), "build_info.json", repo_type="dataset"))
        except Exception:  # noqa: BLE001 - not a rexrank build, or not reachable: no metadata to go by
            return None
    try:
        name = json.loads(info.read_text(encoding="utf-8")).get("dataset") if info and info.is_file() else None
    except (OSError, ValueError, AttributeError):
        return None
    return name if isinstance(name, str) else None


def identify(split: Split) -> DataUse:
    """What `split` is: credentialed, public, or of unknown origin (see the module's rules)."""
    from rexrank.catalog import built_dataset

    ids = set(split.studies["study_id"])
    for (name, part), public in OFFICIAL_SPLITS.items():
        shared = len(ids & set(official_ids(name, part) or ()))
        if shared and not public:
            label = credentialed(name) or name
            return DataUse(label, False, f"{shared:,} of its study ids are in the official {name} {part} split")
    built = built_as(split.source)
    made = built_dataset(built) if built is not None else None
    if made is not None:
        info, private = made
        if info.credentialed or private:
            return DataUse(credentialed(built) or info.title, False, f"its build metadata says {built}")
    for name in (split.dataset, split.source):
        if label := credentialed(name):
            return DataUse(label, False, f"named {name!r}")
    if is_demo(split.source):
        return DataUse("the synthetic demo set", True, "rexrank's own synthetic reports")
    if made is not None:
        return DataUse(made[0].title, True, f"its build metadata says {built}, a public dataset")
    public_ids = set().union(*(official_ids(n, p) or () for (n, p), public in OFFICIAL_SPLITS.items() if public))
    if ids and ids <= public_ids:
        return DataUse("IU-Xray", True, "every study id is one of IU-Xray's official test or valid ids")
    return DataUse(f"dataset {split.dataset!r} ({split.source})", False,
                   "not known to be public: neither a rexrank build of a public dataset nor a split whose study ids "
                   "are a public set's")
