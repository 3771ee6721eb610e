"""The test sets and the board's metrics, each defined once: the names results and files use, how the board shows
them, which split ReXrank scores and its size, which text is credentialed, which set only the maintainers score,
and how ReXrank's own tables name each (docs/metrics.md §10). Everything else reads these.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TestSet:
    name: str  # in results, file names and the board: "mimic-cxr"
    title: str  # as the board shows it
    split: str  # the split ReXrank scores
    studies: int  # its size in ReXrank's split file
    credentialed: bool  # under a data use agreement: never sent to a public LLM API
    private: bool  # scored only by the maintainers' gated job; a submission carries predictions only
    official_key: str  # ReXrank's table files: findings_result_<key>.csv, result_<key>.csv
    other_splits: dict[str, int] = field(default_factory=dict)  # other official splits rexrank knows, and sizes


TEST_SETS: dict[str, TestSet] = {t.name: t for t in (
    TestSet("rexgradient", "ReXGradient", "test", 10_000, credentialed=True, private=True,
            official_key="gradienthealth"),
    TestSet("mimic-cxr", "MIMIC-CXR", "test", 2_347, credentialed=True, private=False, official_key="mimiccxr"),
    TestSet("iu-xray", "IU-Xray", "test", 590, credentialed=False, private=False, official_key="iu_xray",
            other_splits={"valid": 296}),
    TestSet("chexpert-plus", "CheXpert Plus", "valid", 200, credentialed=True, private=False,
            official_key="chexpertplus"),
)}
PUBLIC_DATASETS = tuple(name for name, t in TEST_SETS.items() if not t.private)
PRIVATE_DATASETS = tuple(name for name, t in TEST_SETS.items() if t.private)
DATASETS = PUBLIC_DATASETS + PRIVATE_DATASETS

# Credentialed text that is not a report test set: RadRBench-CXR's items quote MIMIC-CXR and CheXpert reports.
OTHER_CREDENTIALED = {"radrbench-cxr": "RadRBench-CXR"}

TASK_TITLES = {"findings": "Findings", "findings_impression": "Findings + Impression"}
# How a model can be had, as a submission's card says (`access`; blank: not said): the board filters on it.
ACCESS = {"open-weights": "open weights", "api": "API"}


@dataclass(frozen=True)
class BoardMetric:
    name: str  # in results and on the command line
    title: str  # as ReXrank's tables head its column ("1/RadCliQ-v1": the board shows 1 / mean)


# The board's columns, in the order of ReXrank's tables.
BOARD_METRICS: tuple[BoardMetric, ...] = (
    BoardMetric("bleu2", "BLEU"), BoardMetric("bertscore", "BertScore"), BoardMetric("semb_score", "SembScore"),
    BoardMetric("radgraph", "RadGraph"), BoardMetric("radcliq_v1", "1/RadCliQ-v1"),
    BoardMetric("ratescore", "RaTEScore"), BoardMetric("green", "GREEN"), BoardMetric("fineradscore", "1/FineRadScore"),
)
