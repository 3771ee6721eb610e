"""The rule against near-copies of public references (rexrank.rules.copies) on synthetic reports: what a copier
sends is refused, what models write is not, and the measure is the one documented."""

import json
import random

import pytest
from fixtures.reports import SENTENCES, varied_report

from rexrank.rules.copies import LIKENESS, MARGIN, copy_problem, likeness, near_copies, pairs

N = 200


@pytest.fixture(scope="module")
def references():
    rng = random.Random(7)
    refs = [varied_report(rng) for _ in range(N)]
    template = "The lungs are clear without focal consolidation. Heart size is normal."
    for i in range(0, N, 10):  # a stock report that 20 studies share, as normal studies do
        refs[i] = template
    return refs


def edited(reference: str, rng: random.Random) -> str:
    """A copier's light touch: one word changed, and a sentence dropped when there are four or more."""
    sentences = reference.split(". ")
    if len(sentences) >= 4:
        sentences.pop(rng.randrange(len(sentences)))
    words = ". ".join(sentences).split(" ")
    words[rng.randrange(len(words))] = "possibly"
    return " ".join(words)


def model_like(reference: str, rng: random.Random) -> str:
    """What a model writes: the stock phrases kept, each study-specific sentence its own (often wrong) version."""
    return " ".join(s if s in SENTENCES else varied_report(rng).split(". ")[0] + "."
                    for s in (x if x.endswith(".") else x + "." for x in reference.split(". ")))


def test_likeness_is_the_jaccard_index_of_adjacent_word_pairs():
    assert pairs("The Lungs, are clear.") == {("the", "lungs"), ("lungs", "are"), ("are", "clear")}
    assert likeness(pairs("a b c"), pairs("a b d")) == pytest.approx(1 / 3)
    assert likeness(pairs(""), pairs("")) == 0.0 and likeness(pairs("a b"), pairs("A  B!")) == 1.0


@pytest.mark.slow
def test_copies_and_light_edits_are_found_and_a_shared_stock_report_is_not(references):
    rng = random.Random(1)
    exact = near_copies(references, references)
    assert len(exact) == N - 20 and all(i % 10 for i in exact)  # the stock report identifies none of its 20 studies
    light = near_copies([edited(r, rng) for r in references], references)
    assert len(light) > 0.5 * N


@pytest.mark.parametrize("system", ["model", "stock", "shuffled"])
def test_what_a_model_writes_is_not_a_copy(references, system):
    rng = random.Random(2)
    predictions = {"model": [model_like(r, rng) for r in references],
                   "stock": ["The lungs are clear without focal consolidation. Heart size is normal."] * N,
                   "shuffled": references[1:] + references[:1]}[system]  # real reports, of other studies
    # a model can happen on the one reference a combination of stock sentences makes (two of 200 here): the share
    # a set may hold is there for them
    assert len(near_copies(predictions, references)) <= (2 if system == "model" else 0)
    assert copy_problem([f"s{i}" for i in range(N)], predictions, references) is None


def test_a_text_the_set_writes_for_several_studies_is_its_own_stock_report():
    """A model's stock report that happens to equal one study's unique reference (cvt2distilgpt2 writes one such text
    for 59 MIMIC-CXR studies) identifies none of them; a copier's predictions are each its own study's."""
    own = "Small left pleural effusion in the lower lobe unchanged from prior with a left PICC line in the SVC"
    others = ["Heart size is normal.", "No acute cardiopulmonary process.", "Lungs are clear."]
    assert near_copies([own, "x y z", "x y w", "x y v"], [own, *others]) == [0]
    assert near_copies([own, own, own, "x y"], [own, *others]) == []


def test_the_margin_over_every_other_reference_is_what_makes_a_copy():
    own = ("Small left pleural effusion in the lower lobe unchanged from prior. The left PICC line terminates 3.5 cm "
           "above the cavoatrial junction")
    twin = own.replace("3.5 cm", "3.5 mm")  # another study's reference, nearly the same text
    assert likeness(pairs(own), pairs(own)) == 1.0 and likeness(pairs(own), pairs(twin)) > 1.0 - MARGIN
    assert near_copies([own, "x y"], [own, twin]) == []  # too like the twin's reference to identify its own
    assert near_copies([own, "x y"], [own, "Heart size is normal."]) == [0]
    assert LIKENESS == 0.8 and MARGIN == 0.2


def test_a_set_is_refused_past_its_share_and_the_message_names_studies(references):
    ids = [f"s{i}" for i in range(N)]
    honest = [f"Nothing particular in study {i} today." for i in range(N)]
    two = [references[i] if i in (1, 2) else p for i, p in enumerate(honest)]  # 1% of 200: two may be copies
    assert copy_problem(ids, two, references) is None
    three = [references[i] if i in (1, 2, 3) else p for i, p in enumerate(honest)]
    why = copy_problem(ids, three, references)
    assert why.startswith("more than 2 of 200 predictions are near-copies of their own reference (studies s1, s2, "
                          "s3, ...)") and "at most 1% of a set may be" in why
    # a small set: one copy is allowed, two are not
    assert copy_problem(ids[:10], [honest[0], references[1], *honest[2:10]], references[:10]) is None
    assert copy_problem(ids[:10], [honest[0], *references[1:3], *honest[3:10]], references[:10]) is not None


def test_the_check_stops_once_a_set_is_decided(references, monkeypatch):
    """A copier's whole set costs the studies up to the first refused share, not every pair of studies."""
    import rexrank.rules.copies as copies

    calls = []
    real = copies.likeness
    monkeypatch.setattr(copies, "likeness", lambda a, b: calls.append(1) or real(a, b))
    assert copy_problem([f"s{i}" for i in range(N)], references, references) is not None
    assert len(calls) < 10 * N  # three copies found among the first studies, each checked against every reference


def test_a_split_file_of_copies_scores_with_a_warning(tmp_path, references, capsys):
    from rexrank.cli import main
    from rexrank.results import Result

    split = tmp_path / "iu_xray_test.jsonl"
    split.write_text("".join(json.dumps({"study_id": f"s{i}", "findings": r, "impression": "Normal."}) + "\n"
                             for i, r in enumerate(references)))
    predictions = tmp_path / "copies.jsonl"
    predictions.write_text("".join(json.dumps({"study_id": f"s{i}", "prediction": r}) + "\n"
                                   for i, r in enumerate(references)))
    assert main(["score", "--predictions", str(predictions), "--dataset", str(split), "--task", "findings",
                 "--metrics", "bleu2", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    [result] = [Result.read(p) for p in (tmp_path / "out").glob("*.json")]
    assert any("near-copies of their own reference" in w and "the leaderboard's review refuses such a set" in w
               for w in result.warnings)
