"""The metric cards' facts are the scorers': each card's "At a glance" block is what metrics/cards.py writes from the
scorer, and the words that restate BERTScore's layer and baseline elsewhere (the card's prose, the module, the README,
docs/metrics.md) are checked against the scorer's constants, so changing one names every line left to change."""

import re

import pytest
from conftest import ROOT
from fixtures.scripts import load

from rexrank.scorers import BOARD_METRICS, canonical
from rexrank.scorers.bertscore import BASELINE, LAYER, MODEL, BertScore, rescale

METRICS_DIR = ROOT / "metrics"


def cards():
    return load(METRICS_DIR / "cards.py", "metric_cards")


def test_every_board_metric_has_a_card_with_a_block():
    assert {canonical(folder) for folder in cards().CARDS} >= set(BOARD_METRICS) | {"radcliq_v1"}
    folders = {p.name for p in METRICS_DIR.iterdir() if (p / "README.md").exists()}
    assert set(cards().CARDS) == folders - {"radrscore", "rexvqa_accuracy"}  # RadRBench-CXR's and ReXVQA's


@pytest.mark.parametrize("folder", cards().CARDS)
def test_each_cards_block_is_what_its_scorer_says(folder):
    text = (METRICS_DIR / folder / "README.md").read_text(encoding="utf-8")
    module = cards()
    assert text.count(module.BEGIN) == 1 and text.count(module.END) == 1, folder
    assert module.card(folder, text) == text, f"run python metrics/cards.py: metrics/{folder}/README.md is stale"


def test_a_changed_summary_makes_the_block_stale():
    module = cards()
    text = (METRICS_DIR / "bleu2" / "README.md").read_text(encoding="utf-8")
    stale = text.replace("| version | 1 |", "| version | 0 |")
    assert stale != text and module.card("bleu2", stale) == text  # written anew from the scorer, in place


def test_bertscores_layer_and_baseline_are_stated_as_the_scorer_has_them():
    b, empty = BASELINE["F"], f"{rescale(0.0, BASELINE['F']):.4f}"
    stated = {
        "README.md": [f"{MODEL} layer {LAYER}, no idf, rescaled (F baseline {b})"],
        "docs/metrics.md": [f"`{MODEL}`, hidden states of layer {LAYER}", f"layer-{LAYER} F baseline {b}",
                            f"rescaled {empty}", f"bert-score's file, row {LAYER}"],
        "metrics/bertscore/README.md": [f"{MODEL} layer {LAYER},", f"layer-{LAYER} baseline", f"of layer {LAYER} of",
                                        f"(F - {b}) / (1 - {b})", f"default {b}", f"layer:{LAYER}|", f"\n{empty}\n"],
        # written from the spec (rexrank.spaces): its summary and its options' defaults
        "metrics/bertscore/bertscore.py": [f"{MODEL} (layer {LAYER},", f"Default {LAYER}.", f"Default {b}."],
    }
    for path, phrases in stated.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        for phrase in phrases:
            assert phrase in text, f"{path} does not say {phrase!r}: BERTScore's LAYER or BASELINE changed"
    for path in ("metrics/bertscore/README.md", "metrics/bertscore/bertscore.py"):  # rexrank's computation alone
        text = (ROOT / path).read_text(encoding="utf-8")
        assert set(re.findall(r"layer[- :](\d+)", text)) == {str(LAYER)}, path
    assert f"layer {LAYER}," in BertScore.summary and empty in BertScore.empty_prediction


def test_the_readmes_metric_tables_have_a_row_per_registry_metric_and_no_other():
    """The README's two metric tables (computed here; judged) name each metric of the registry once, by its one name,
    and nothing the registry does not know: a metric added, renamed or dropped is a README row to write."""
    from rexrank.scorers import METRICS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (`[a-z0-9_]+`(?:, `[a-z0-9_]+`)*) \|", text, flags=re.M)
    named = [name for row in rows for name in re.findall(r"`([a-z0-9_]+)`", row)]
    assert sorted(named) == sorted([*METRICS, "radrscore"]), named  # (RadRScore: RadRBench-CXR's, judged too)
