"""The demo's results repo: synthetic numbers (no scoring, no network) for the demo systems, laid out as a real
results repo (submissions with cards, results and ledger records; imported rows; RadRBench-CXR results), so the
board the Space shows with no results repo named is made by the same aggregate job as a real one."""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from rexrank import demo
from rexrank.catalog import TASK_TITLES, TEST_SETS
from rexrank.contradictions import CHECKED
from rexrank.demo.vqa import demo_vqa
from rexrank.files import file_sha256, write_text
from rexrank.models.conditions import CONDITIONS
from rexrank.radrbench import RADRSCORE_PARTS
from rexrank.reports import text_settings
from rexrank.results import MetricResult, ModelInfo, Result
from rexrank.rules import ledger, signing
from rexrank.rules.layout import CARD, SUBMISSIONS
from rexrank.scorecard import estimates
from rexrank.scorers import METRICS, inverted, spec
from rexrank.scorers.label_f1 import MASKS
from rexrank.signature import Signature


@cache
def demo_key() -> signing.SigningKey:
    """The key the demo signs its synthetic ledger with. Its seed is printed here, so anyone can sign with it: it is
    trusted only where a demo board is ranked (`demo_keys()`, passed explicitly), never configured for a results
    repo."""
    return signing.SigningKey(hashlib.sha256(b"rexrank demo ledger: synthetic numbers, never a results repo").digest())


def demo_keys() -> dict[str, bytes]:
    """The public keys a demo board is ranked with: `aggregate(demo_results_repo(...), demo_keys())`."""
    return {demo_key().id: demo_key().public}


def demo_results_repo(root: str | os.PathLike, crowd: int = 0) -> Path:
    """A results repo of synthetic numbers (no scoring, no network) for the three demo systems on every dataset and
    task, plus one imported row per dataset and task: what the board shows when no results repo is named. Each
    table shows the three provenances: Demo-Careful, a code submission (open weights, its code linked), is as the
    maintainers' inference job writes a model it ran (`generated`), the other two as their reviews re-scored their
    predictions (`scored`), the imported row as published. `crowd` adds that many more synthetic models (a board of
    thousands of rows, for benchmarks/leaderboard.py)."""
    root = Path(root)
    rng = random.Random(0)
    quality = {"demo-careful": 1.0, "demo-template": 0.75, "demo-shuffled": 0.55}
    systems = demo.systems()
    tabled = set(systems)  # the demo systems carry per-study tables; a crowd's synthetic models do not
    for i in range(crowd):
        key = f"synthetic-{i:05d}"
        systems[key] = {"name": f"Synthetic-{i:05d}", "institution": f"Lab {i % 97}", "url": f"https://example.org/{key}",
                        "trained_on": ["synthetic"]}
        quality[key] = rng.uniform(0.4, 1.1)
    # each study's difficulty, shared by every system: what makes a paired comparison sharper than the CIs
    difficulty = {(d, t): np.random.default_rng([i, j]).normal(0, 0.15, STUDIES)
                  for i, d in enumerate(TEST_SETS) for j, t in enumerate(TASK_TITLES)}
    for key, card in systems.items():
        folder = root / SUBMISSIONS / key
        (folder / "results").mkdir(parents=True, exist_ok=True)
        write_text(folder / CARD, json.dumps({**card, "date": "2026-11-01"}, indent=2) + "\n")
        written = {}
        for dataset in TEST_SETS:
            for task in TASK_TITLES:
                level, companions = quality[key] * rng.uniform(0.9, 1.1), {}
                if key in tabled:
                    table, metrics = _demo_per_study(np.random.default_rng(rng.randrange(2**32)), level,
                                                     difficulty[dataset, task], key, task)
                    path = folder / "per_study" / f"{dataset}.{task}.parquet"
                    path.parent.mkdir(exist_ok=True)
                    table.to_parquet(path, index=False)
                    companions = {"per_study.parquet": file_sha256(path)}
                else:
                    metrics = _demo_metrics(rng, level, key, task)
                # a crowd's models are as the maintainers would run them: ranked, as most of a real board would be
                made = GENERATED_FIELDS if key in GENERATED_BY_THE_MAINTAINERS or key not in tabled else {}
                result = Result(ModelInfo(card["name"], card["institution"], card["url"]), dataset, "test", task,
                                metrics, counts={"scored": STUDIES}, created="2026-11-01T00:00:00Z",
                                companions=companions, **made,
                                # synthetic verdicts, as if cross-checked and none contradicted (rule 22)
                                extras={n: {"contradicted": 0} for n in CHECKED if n in metrics})
                written[f"{dataset}.{task}"] = result.write(folder / "results" / f"{dataset}.{task}.json").read_bytes()
        ledger.record_folder(root, key, owner=key, name=card["name"], institution=card["institution"], files=written,
                             pr=0, head="0" * 40, job="demo", key=demo_key())  # synthetic, ranked as if reviewed
    _demo_radrbench(root)
    demo_vqa(root, root / "rexvqa-build", demo_key())  # ReXVQA, as the VQA job commits it (rexrank.demo.vqa)
    (root / "imported").mkdir(parents=True, exist_ok=True)
    for dataset in TEST_SETS:
        for task in TASK_TITLES:
            value = round(0.6 + 0.4 * rng.random(), 3)
            Result(ModelInfo("Demo-Imported (synthetic)", "rexrank demo"), dataset, "test", task,
                   {"radcliq_v1": MetricResult(value, statistic="inverse_mean"),
                    "bleu2": MetricResult(round(0.1 + 0.1 * rng.random(), 3))},
                   provenance="imported", created="2026-11-01T00:00:00Z"
                   ).write(path := root / "imported" / f"{dataset}.{task}.demo-imported.json")
            name = path.relative_to(root).as_posix()  # synthetic, not a shipped figure: vouched for as a maintainer
            ledger.approve_folder(root, name, ledger.approval(name, path.read_bytes(), by="rexrank demo"), demo_key())
    return root


def _demo_radrbench(root: Path) -> None:
    """The demo's two synthetic reasoning models scored on its synthetic RadRBench-CXR items, as submissions."""
    from rexrank.demo import radrbench as rdemo
    from rexrank.radrbench.outputs import load_outputs
    from rexrank.radrbench.score import load_items, score_outputs, write_results

    items = load_items(rdemo.dataset(root / "radrbench-build" / "radrbench-cxr"))
    for (key, card), quality in zip(rdemo.MODELS.items(), (0.75, 0.35)):
        folder = root / SUBMISSIONS / key
        write_text(folder / CARD, json.dumps({**card, "date": "2026-11-01"}, indent=2) + "\n")
        scores = score_outputs(items, load_outputs(rdemo.output_file(key), items))
        write_results(folder / "radrbench", card["name"], scores, _demo_radrscore(scores.rows, quality))


def _demo_radrscore(accuracy: pd.DataFrame, quality: float):
    """Synthetic RadRScore rows for the demo (no judge runs offline), shaped as `score-radrbench` writes them: per
    source and task and overall, every item judged (so the judged items' figures are the board's), each part with a
    CI."""
    from rexrank.radrbench.score import Reasoning

    rng = random.Random(quality)
    groups = accuracy[(accuracy["source"] != "all") | (accuracy["task"] == "all")]
    rows = []
    for source, task, items in zip(groups["source"], groups["task"], groups["items"]):
        row = {"source": source, "task": task, "items": int(items)}
        parts = {part: min(0.95, quality * rng.uniform(0.85, 1.15)) for part in RADRSCORE_PARTS[1:]}
        for part, value in {"radrscore": sum(parts.values()) / 3, **parts}.items():
            half = rng.uniform(0.04, 0.1)
            row |= {part: round(value, 4), f"{part}_low": round(max(0.0, value - half), 4),
                    f"{part}_high": round(min(1.0, value + half), 4), f"{part}_n": int(items)}
        rows.append(row)
    judged = SimpleNamespace(tally=lambda: {"judged": int(groups["items"].max()), "judged_mean": None, "refused": 0,
                                            "unparseable": 0, "cut": 0, "addressed": 0})
    return Reasoning(pd.DataFrame(rows), pd.DataFrame(rows), "radrscore:3|demo:synthetic|unreadable:worst",
                     "radrscore:3|demo:synthetic|unreadable:left-out", judged)


# The demo's code submission: its rows are as the inference job writes a model it ran (synthetic numbers all the same).
GENERATED_BY_THE_MAINTAINERS = ("demo-careful",)
GENERATED_FIELDS = {"provenance": "generated",
                    "checks": {"generated_by": "rexrank inference job", "demo": "synthetic"}}
# The metrics the demo draws: every report metric that declares its demo value (`demo`, its board value at quality 1;
# one without would be blank in the demo's rows, as a metric a result lacks is on the real board). A per-study table
# draws a score per study, or, for a metric made of column sums, its counts (BLEU-4's n-grams) or bitmasks (the label
# F1s'), as `rexrank score` writes them.
CENTRE = {m: spec(m).demo for m in METRICS if spec(m).demo is not None}
DRAWN = tuple(m for m in METRICS if m in CENTRE)
STUDIES = 500


def _signature(name: str, key: str, task: str) -> Signature:
    """A demo number's signature, marked synthetic. A judged metric's is its own builder's as its published figures
    were made (`as_published`: GREEN by its pinned model; FineRadScore by a GPT-4 model with the reference's examples),
    on texts made as `rexrank score` makes them (`text_settings`), so that the board marks ≠ only where the demo means
    it: Demo-Shuffled's judges are another one, gpt-4o, which GREEN's published figures were not made by."""
    as_published = getattr(spec(name).implementation, "as_published", None)
    made = Signature(name, "1") if as_published is None else as_published(
        "judge:gpt-4o:t=0:max_tokens=1024" if key == "demo-shuffled" else None)
    return replace(made, settings={**made.settings, **text_settings(task), "demo": "synthetic"})


def _demo_per_study(rng: np.random.Generator, quality: float, difficulty: np.ndarray, key: str, task: str
                    ) -> tuple[pd.DataFrame, dict[str, MetricResult]]:
    """Synthetic per-study scores (each metric's board value about CENTRE x quality; a judged metric's answer for a
    few studies is not read, and they count as its worst) and the numbers made from them as `rexrank score` makes
    them."""
    table = {"study_id": [f"demo-{i:04d}" for i in range(STUDIES)], **_demo_counts(rng, quality)}
    for name in (m for m in DRAWN if not spec(m).sufficient):
        made, target = spec(name), CENTRE[name] * quality
        noise = difficulty + rng.normal(0, 0.1, STUDIES)
        if inverted(name):  # per study on the mean's own scale (lower is better); the board shows 1 / the mean
            values = np.clip(1 / target - 2 * noise, *made.bounds)
        else:
            values = np.clip(target + noise, max(made.bounds[0], 0.0), min(made.bounds[1], 1.0))
        worst = getattr(made.implementation, "worst", None)  # a judged metric's unread study counts as its worst
        if worst is not None:
            values = np.where(rng.random(STUDIES) < 0.02, worst, values)
        table[name] = values
    per_study = pd.DataFrame(table)
    signatures = {name: _signature(name, key, task) for name in DRAWN}
    return per_study, estimates(per_study, signatures)


def _demo_counts(rng: np.random.Generator, quality: float) -> dict[str, np.ndarray]:
    """Synthetic sufficient statistics: BLEU-4's n-gram matches and totals and lengths, and the CheXbert conditions a
    study's two reports agree and disagree on as TP/FP/FN bitmasks (`rexrank.scorers.label_f1.MASKS`)."""
    length = rng.poisson(40, STUDIES) + 5
    out = {"bleu4.length": length, "bleu4.reference": np.round(length * rng.uniform(0.9, 1.3, STUDIES)).astype(int)}
    for n in range(1, 5):
        total = np.maximum(length - n + 1, 0)
        out[f"bleu4.total{n}"] = total
        out[f"bleu4.match{n}"] = rng.binomial(total, min(0.95, 0.45 * quality * 0.55 ** (n - 1)))
    conditions = len(CONDITIONS)
    reference = rng.random((STUDIES, conditions)) < 0.25
    said = np.where(reference, rng.random(reference.shape) < min(0.95, 0.6 * quality),
                    rng.random(reference.shape) < 0.1 / quality)
    bits = np.left_shift(1, np.arange(conditions, dtype=np.int64))
    for column, mask in zip(MASKS, (reference & said, ~reference & said, reference & ~said)):
        out[column] = (mask * bits).sum(axis=1).astype(np.int64)
    return out


def _demo_metrics(rng: random.Random, quality: float, key: str, task: str) -> dict[str, MetricResult]:
    centre = CENTRE
    out = {}
    for name in DRAWN:
        value = centre[name] * quality * rng.uniform(0.95, 1.05)
        half = value * rng.uniform(0.02, 0.05)
        signature = _signature(name, key, task).with_bootstrap(1000, 0)
        statistic = spec(name).statistic  # 1/RadCliQ-v1 and 1/FineRadScore: the value is 1 / mean
        mean = 1 / value if inverted(name) else value
        out[name] = MetricResult(round(value, 4), round(mean, 4), round(value - half, 4), round(value + half, 4), 500,
                                 statistic, signature=signature)
    return out
