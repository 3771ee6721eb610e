"""RadRBench-CXR's dataset card, from what a build wrote in build_info.json (rexrank.radrbench.dataset)."""

from __future__ import annotations

from rexrank.catalog import RADRBENCH_CXR, RADRBENCH_TERMS
from rexrank.data.build import front_matter
from rexrank.radrbench.answers import TASKS


def card(info: dict) -> str:
    """README.md from a build's build_info.json: YAML front matter (one config per source and task, gated) and the
    card text."""
    d, split, configs = RADRBENCH_CXR, info["split"], info["counts"]["configs"]
    yaml = front_matter(d, ("radiology", "chest-x-ray", "visual-question-answering", "reasoning", "rexrank"),
                        sorted(configs), split)
    checked = info["images_checked"]
    rows = "\n".join(f"| `{name}` | {c['task']} | {c['source']} | {c['items']:,} | {c['with_reasoning']:,} | "
                     f"{c['missing']:,} |" if checked else
                     f"| `{name}` | {c['task']} | {c['source']} | {c['items']:,} | {c['with_reasoning']:,} | - |"
                     for name, c in sorted(configs.items()))
    sources = sorted({c["source"] for c in configs.values()})
    terms = "\n".join(f"- {RADRBENCH_TERMS[s]}" for s in sources if s in RADRBENCH_TERMS)
    example = sorted(configs)[0]
    apart = [f"`{name}` ({c['only_in_reasoning_files']:,})" for name, c in sorted(configs.items())
             if c["only_in_reasoning_files"]]
    apart_line = ("" if not apart else "\nItems only in the reasoning files, not in the source's test file (the "
                  "published CheXpert reasoning items are CheXpert validation studies, its test items test studies): "
                  + ", ".join(apart) + ". `source_files` tells them apart.\n")
    checked_line = ("Images were checked under the image root given at build time." if checked else
                    "Images were not checked (no image root given at build time).")
    return "\n".join(yaml) + f"""

# {d.title}

{d.description}

Built by `rexrank build-dataset {d.name}` (rexrank {info['rexrank']}) from the user's own download of
{d.homepage} ({len(info['sources'])} file(s), sha256 in build_info.json); the text is the published one, unchanged.
Tasks (`task`): {', '.join(TASKS)}. Answers are read with `rexrank.radrbench.answers` (one parser for every model).

## Configs and counts

| config | task | source | items | with reasoning | images not found |
|---|---|---|---:|---:|---:|
{rows}
{apart_line}
{checked_line}

## Columns

- `item_id`: unique in its config: the published `item_id`, numbered `<id>#2`, `<id>#3` where the published files
  ask several questions under one id (the temporal items); `published_item_id`: the id as published.
- `task`: binary, single, multi, multi_no_option or temporal; `source`: where the images (and reports) come from.
- `question`: the question as published, its options inside (`A) ...` lines); `options`: those options as
  `{{letter, text}}` (empty without options).
- `answer`: the reference answer as published (a letter, or the comma-separated findings for multi_no_option);
  `answer_content`: its text.
- `image_paths`: the item's images, relative to the image root (the published layout from the dataset's folder
  on, e.g. `MIMIC-CXR-JPG/files/p10/...`, where the image was not found under the root).
- `reason_steps`: the reference reasoning steps as a list of strings (a published string is split at line breaks;
  a published `{{"reason_steps": ...}}` gives its value); null outside the reasoning subset.
  `reason_steps_json`: the published form as JSON (string, list or object), which RadRScore renders as the
  reference did.
- `original_report`: the source report of the reasoning subset, null where absent.
- `source_files`: the published files the item was read from; `extra_json`: the other published fields
  (`dataset_name`, `plan`, ...) as JSON.

```python
from datasets import load_dataset
items = load_dataset("PATH_OR_ORG/NAME", "{example}", split="{split}")
```

## Licence and access

{d.access}

{terms}

## Citation

```bibtex
{d.citation.strip()}
```
"""
