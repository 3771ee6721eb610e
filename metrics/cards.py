"""Writes every metric's folder from its spec (`python metrics/cards.py`): the `evaluate` module, app.py and
requirements.txt (`rexrank.spaces`), a first card for a metric that has none, and each card's "At a glance" block from
the metric's spec
(`rexrank.scorers.spec`): its name and other names, the board's title (1/ where its value is 1 / the mean), its
statistic, the range of a study's score (or its sufficient statistics), what an empty prediction scores, its version,
what it measures and where docs/metrics.md defines it. Generated so that it cannot drift from the spec:
tests/metrics/test_cards.py fails when a card's block is not what this writes. RadRScore's and ReXVQA accuracy's
cards have none: they score reasoning steps and answers to questions, not report pairs."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

from rexrank import spaces, stats
from rexrank.publish import metric_folders
from rexrank.scorers import BOARD_METRICS, aliases, canonical, shown, spec

HERE = Path(__file__).parent
BEGIN = "<!-- at a glance: written by metrics/cards.py from the metric's spec; edit the spec, then run it -->"
END = "<!-- end of at a glance -->"
WRITTEN = re.compile(r"<!-- at a glance: [^\n]*-->.*?" + re.escape(END), flags=re.S)  # a block, under any BEGIN
# The folders whose card has the block: the metric Spaces of the registry's report metrics (not RadRScore's, ReXVQA's).
CARDS = tuple(f.name for f in metric_folders(HERE) if spec(f.name).report)


def _bound(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:g}"


def glance(folder: str) -> str:
    name = canonical(folder)
    cls = spec(name)  # the metric's spec: everything the block says is its
    low, high = cls.bounds
    scale = "unbounded" if (low, high) == (-math.inf, math.inf) else f"[{_bound(low)}, {_bound(high)}]"
    study = ("a study's score", scale) if not cls.sufficient else (
        "a study's numbers", f"{len(cls.columns)} sufficient statistics ({', '.join(f'`{c}`' for c in cls.columns)}); "
                             f"the value lies in {scale}")
    value = stats.WORDS[cls.statistic]
    other = ", ".join(f"`{a}`" for a in aliases(name)) or "none"
    where = "on the board" if name in BOARD_METRICS else "its value"  # BLEU-4 and ROUGE-L are printed, not ranked
    rows = [("name", f"`{name}` (other names: {other})"), (where, f"{shown(name)}, {value}; higher is better"),
            study, ("an empty prediction", cls.empty_prediction), ("version", cls.version),
            ("what it measures", cls.summary),
            *([("convention (other tools' names beside)", cls.convention)] if cls.convention else []),
            ("defined in", f"rexrank's docs/metrics.md {cls.section}")]
    body = "\n".join(f"| {key} | {text} |" for key, text in rows)
    return f"{BEGIN}\n## At a glance\n\n| | |\n|---|---|\n{body}\n{END}"


def card(folder: str, text: str) -> str:
    """The card with its block written anew, just below its title."""
    block = glance(folder)
    if WRITTEN.search(text):
        return WRITTEN.sub(lambda _: block, text, count=1)
    title = re.search(r"^# .*\n", text, flags=re.M)
    return f"{text[:title.end()]}\n{block}\n{text[title.end():]}"


def first_card(folder: str) -> str:
    """A card for a metric that has none yet, from its spec: the Space's header and the card's sections, to be
    written on by hand (the block is rewritten, the prose kept)."""
    made = spec(canonical(folder))
    call = (f'{folder} = evaluate.load("rexrank/{folder}")\n'
            f"results = {folder}.compute(predictions=..., references=...)")
    return (f"---\ntitle: {made.title} (rexrank)\nemoji: 🩻\ncolorFrom: blue\ncolorTo: indigo\nsdk: gradio\n"
            f"sdk_version: 6.0.0\napp_file: app.py\npinned: false\ntags:\n- evaluate\n- metric\n- radiology\n"
            f"- report-generation\ndescription: >-\n  {made.summary}\n---\n\n"
            f"# Metric Card for {made.title} (rexrank)\n\n"
            f"## Metric Description\n\n{made.summary} rexrank's docs/metrics.md {made.section} defines it.\n\n"
            f"## How to Use\n\n```python\nimport evaluate\n\n{call}\n```\n\n### Inputs\n\n"
            f"- **predictions** (`list[str]`): generated reports.\n- **references** (`list[str]`): one ground-truth "
            f"report per prediction.\n\n### Output Values\n\nAs the module's docstring lists them ({folder}.py).\n\n"
            f"## Limitations and Bias\n\nSee rexrank's docs/metrics.md {made.section}.\n\n## Citation\n\n"
            f"ReXrank's, below.\n")


def main() -> int:
    for folder, name in spaces.folders().items():
        (HERE / folder).mkdir(exist_ok=True)
        readme = HERE / folder / "README.md"
        if not readme.is_file():
            readme.write_text(first_card(folder), encoding="utf-8")
        if spec(name).report:
            readme.write_text(card(folder, readme.read_text(encoding="utf-8")), encoding="utf-8")
        spaces.write(name, HERE / folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
