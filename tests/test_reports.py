import math

import pytest

from rexrank.errors import InputError
from rexrank.reports import build_references, findings_impression_text, section

STUDIES = [
    ("s1", "Heart size is normal.", "No acute process."),
    ("s2", "Small left effusion.", None),  # no impression: the literal word None appears
    ("s3", None, "Mild edema."),  # no findings
    ("s4", float("nan"), "   "),  # NaN and blank are missing too: neither section
    ("s5", "  ", math.nan),
]


def test_findings_impression_text_is_the_rexrank_f_string():
    assert findings_impression_text("A.", "B.") == "Findings: A. Impression: B."
    assert findings_impression_text("A.", None) == "Findings: A. Impression: None"
    assert findings_impression_text(None, "B.") == "Findings: None Impression: B."


def test_findings_task_drops_studies_without_findings_and_says_so():
    refs = build_references(STUDIES, "findings")
    assert refs.references == {"s1": "Heart size is normal.", "s2": "Small left effusion."}
    assert refs.dropped == {"s3": "no findings section", "s4": "no findings section", "s5": "no findings section"}


def test_findings_impression_task_keeps_one_missing_section_as_none():
    refs = build_references(STUDIES, "findings_impression")
    assert refs.references == {
        "s1": "Findings: Heart size is normal. Impression: No acute process.",
        "s2": "Findings: Small left effusion. Impression: None",
        "s3": "Findings: None Impression: Mild edema.",
    }
    assert set(refs.dropped) == {"s4", "s5"}


def test_sections_are_kept_verbatim():
    assert section("  Heart  size.\n") == "  Heart  size.\n"
    assert section(None) is None and section(float("nan")) is None and section(" \n") is None


def test_bad_section_and_task_are_named():
    with pytest.raises(InputError, match="study s9: findings must be text, got int$"):
        build_references([("s9", 3, None)], "findings")
    with pytest.raises(InputError, match="unknown task 'impression'"):
        build_references(STUDIES, "impression")
