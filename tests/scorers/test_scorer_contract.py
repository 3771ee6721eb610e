"""Every metric rexrank computes keeps the one contract (tests/fixtures/metric_contract.py): each metric's test file
declares its case beside its parity tests (`class Test...Contract(MetricContract)`), and this file finds them all, so
that a metric the registry lists without a contract fails here, whichever files a run collects."""

import importlib
import sys

from conftest import ROOT
from fixtures.metric_contract import (
    AS_WRITTEN,
    CHECKS,
    DIFFERS,
    SAME,
    CompositeCase,
    JudgedCase,
    LabelF1Case,
    MetricContract,
    ScorerCase,
)

from rexrank.scorers import AGGREGATED, COMPOSITES, JUDGED, SCORERS
from rexrank.scorers.rexvqa_accuracy import NAME as REXVQA


def contracts() -> list[type[MetricContract]]:
    """Every `MetricContract` class of the test files under tests/, their modules imported as pytest imports them
    (by file name, their folder on sys.path: the default "prepend" import mode)."""
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "(MetricContract):" in path.read_text(encoding="utf-8"):
            if str(path.parent) not in sys.path:
                sys.path.insert(0, str(path.parent))
            importlib.import_module(path.stem)
    return [c for c in MetricContract.__subclasses__() if c.__name__.startswith("Test")]


def test_every_metric_of_the_registry_has_one_contract_and_it_is_the_registrys_own():
    found = contracts()
    names = [c.case.name for c in found]
    twice = sorted(f"{c.__module__}.{c.__name__}" for c in found if names.count(c.case.name) > 1)
    # one contract a metric; a test module imported under a second name (`scorers.test_bleu`) runs its contract twice
    assert not twice, f"more than one contract for a metric: {twice}; import another test file by its file name"
    assert set(names) == {*SCORERS, *COMPOSITES, *AGGREGATED, *JUDGED, "radrscore", "radrbench-accuracy",
                          REXVQA}
    for contract in found:  # each case is the registry's own metric
        case = contract.case
        if isinstance(case, ScorerCase):
            assert SCORERS[case.name] is case.cls
        elif isinstance(case, CompositeCase):
            assert COMPOSITES[case.name] is case.composite
            assert list(case.components) == list(case.composite.needs)
        elif isinstance(case, LabelF1Case):
            assert AGGREGATED[case.name] is case.metric
        elif isinstance(case, JudgedCase):
            assert JUDGED[case.name] is case.cls and case.cls.name == case.name
        assert case.why and case.nfd in (SAME, DIFFERS, AS_WRITTEN) and case.nfd_why
        assert set(case.skips) <= set(CHECKS) and all(case.skips.values()), case.skips  # each skip says why
        assert (case.variant is None) == ("variant" in case.skips), case.name
