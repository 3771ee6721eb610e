"""BLEU-4 over the corpus and ROUGE-L against coco-caption's scorers (pycocoevalcap 1.2, the oracle in the dev extra),
on the texts R2Gen hands them: each report cleaned by the dataset's cleaner, then through R2Gen's Tokenizer and back
(its two cleaners, its vocabulary and its decode transcribed below from zhjohnchan/R2Gen `modules/tokenizers.py` as
the oracle's input, apart from rexrank's own step tables); then what the spec promises of a metric of sufficient
statistics: shards merge exactly, the CI resamples studies, the rules recompute it, a paired test compares it."""

import json
import random
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from fixtures.metric_contract import DIFFERS, MetricContract, ScorerCase, SufficientCase
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.rouge.rouge import Rouge, my_lcs

from rexrank import stats
from rexrank.cli import main
from rexrank.data.build import official_ids
from rexrank.hf_metric import compute
from rexrank.results import ModelInfo, Result
from rexrank.rules.contents import metric_problems, per_study_problems
from rexrank.rules.parquet import check_per_study
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import SCORERS, spec
from rexrank.scorers.coco import (
    CLEANERS,
    TOKENIZE,
    Bleu4,
    clean_iu_xray,
    clean_mimic_cxr,
    decoded,
    lcs_length,
    rouge_l_pair,
)
from rexrank.significance import paired

WORDS = ("the lungs are clear no pleural effusion pneumothorax heart size is normal mild cardiomegaly Bibasilar "
         "atelectasis Right LEFT lower-lobe opacity, effusion; (stable) 1.2 cm nodule: ETT tip 4 cm <above> carina "
         "__ x-ray 'prior' \"new\" a/p 50% unchanged").split()
SEPARATORS = [" ", " ", " ", " ", "  ", "\n", ". ", ", ", " .", "...", "\t", ". 2. ", " 3. ", "1. "]


def r2gen_oracle(report: str) -> str:
    """R2Gen's `clean_report_mimic_cxr`, as its two lambdas are written."""
    report_cleaner = lambda t: (t.replace('\n', ' ').replace('__', '_').replace('__', '_').replace('__', '_')  # noqa: E731
        .replace('__', '_').replace('__', '_').replace('__', '_').replace('__', '_').replace('  ', ' ')
        .replace('  ', ' ').replace('  ', ' ').replace('  ', ' ').replace('  ', ' ').replace('  ', ' ')
        .replace('..', '.').replace('..', '.').replace('..', '.').replace('..', '.').replace('..', '.')
        .replace('..', '.').replace('..', '.').replace('..', '.').replace('1. ', '').replace('. 2. ', '. ')
        .replace('. 3. ', '. ').replace('. 4. ', '. ').replace('. 5. ', '. ').replace(' 2. ', '. ')
        .replace(' 3. ', '. ').replace(' 4. ', '. ').replace(' 5. ', '. ')
        .strip().lower().split('. '))
    sent_cleaner = lambda t: re.sub('[.,?;*!%^&_+():-\\[\\]{}]', '', t.replace('"', '').replace('/', '')  # noqa: E731
                                    .replace('\\', '').replace("'", '').strip().lower())
    tokens = [sent_cleaner(sent) for sent in report_cleaner(report) if sent_cleaner(sent) != []]
    return ' . '.join(tokens) + ' .'


def r2gen_iu_oracle(report: str) -> str:
    """R2Gen's `clean_report_iu_xray`, as its two lambdas are written."""
    report_cleaner = lambda t: (t.replace('..', '.').replace('..', '.').replace('..', '.').replace('1. ', '')  # noqa: E731
        .replace('. 2. ', '. ').replace('. 3. ', '. ').replace('. 4. ', '. ').replace('. 5. ', '. ')
        .replace(' 2. ', '. ').replace(' 3. ', '. ').replace(' 4. ', '. ').replace(' 5. ', '. ')
        .strip().lower().split('. '))
    sent_cleaner = lambda t: re.sub('[.,?;*!%^&_+():-\\[\\]{}]', '', t.replace('"', '').replace('/', '')  # noqa: E731
                                    .replace('\\', '').replace("'", '').strip().lower())
    tokens = [sent_cleaner(sent) for sent in report_cleaner(report) if sent_cleaner(sent) != []]
    return ' . '.join(tokens) + ' .'


ORACLE_CLEANERS = {"r2gen-mimic": r2gen_oracle, "r2gen-iu": r2gen_iu_oracle, "none": str}


def r2gen_round_trip(reports, clean):
    """What R2Gen's trainer hands its metrics: `decode(tokenizer(report)[1:])`, its Tokenizer transcribed (a vocabulary
    of every token these reports hold, so that no token is <unk>; ids 1.., 0 ends a report)."""
    vocab = sorted({token for report in reports for token in clean(report).split()} | {"<unk>"})
    token2idx = {token: i + 1 for i, token in enumerate(vocab)}
    idx2token = {i: token for token, i in token2idx.items()}

    def decode(ids):
        txt = ''
        for i, idx in enumerate(ids):
            if idx > 0:
                if i >= 1:
                    txt += ' '
                txt += idx2token[idx]
            else:
                break
        return txt

    return [decode(([0] + [token2idx.get(t, token2idx["<unk>"]) for t in clean(r).split()] + [0])[1:])
            for r in reports]


def synthetic_pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """Synthetic reports (no dataset's text), half of them edited copies of their reference, some empty."""
    rng = random.Random(seed)

    def report(length):
        return "".join(rng.choice(WORDS) + rng.choice(SEPARATORS) for _ in range(length)).strip(" ")

    pairs = []
    for _ in range(n):
        reference = report(rng.randint(1, 40))
        if rng.random() < 0.5:
            candidate = " ".join(w for w in reference.split(" ") if rng.random() < 0.85) + rng.choice(["", " new."])
        else:
            candidate = report(rng.randint(0, 40))
        pairs.append((candidate, reference))
    return pairs


PAIRS = synthetic_pairs(300, seed=1)


def oracle(pairs, tokenize: str):
    """coco-caption's BLEU-4 and ROUGE-L on the pairs as R2Gen's trainer hands them over (`tokenize` "none": as given,
    as a caller of pycocoevalcap that cleans nothing hands them)."""
    clean = ORACLE_CLEANERS["r2gen-mimic" if tokenize == "r2gen" else tokenize]
    candidates, references = zip(*pairs)
    if clean is not str:
        candidates, references = r2gen_round_trip(candidates, clean), r2gen_round_trip(references, clean)
    gts = {i: [r] for i, r in enumerate(references)}
    res = {i: [c] for i, c in enumerate(candidates)}
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    rouge, per_study = Rouge().compute_score(gts, res)
    return bleu[3], rouge, per_study


TEXTS = [c for pair in PAIRS for c in pair] + ["", "1. A. 2. B.  3. C..", "Tip <at> T4 = 2 cm @ carina?", "a.  b",
                                              "Effusion.\nNo pneumothorax.", "a.  2. b....", "x __ y.  . z"]


def test_each_r2gen_cleaner_is_r2gens():
    assert [clean_mimic_cxr(t) for t in TEXTS] == [r2gen_oracle(t) for t in TEXTS]
    assert [clean_iu_xray(t) for t in TEXTS] == [r2gen_iu_oracle(t) for t in TEXTS]
    assert clean_mimic_cxr("Tip <at> T4 = 2 cm.") == "tip at t4  2 cm ."  # the class's range `:-[` takes < = > too
    # IU-Xray's keeps line breaks: a sentence after a line break is not split off
    assert clean_iu_xray("Effusion.\nNo pneumothorax.") == "effusion\nno pneumothorax ."
    assert clean_mimic_cxr("Effusion.\nNo pneumothorax.") == "effusion . no pneumothorax ."


def test_the_texts_scored_are_r2gens_decode_of_its_tokens():
    """Single spaces, no empty token: what R2Gen's Tokenizer gives back for a cleaned report."""
    for name, clean in ORACLE_CLEANERS.items():
        if clean is not str:
            assert [decoded(t, name) for t in TEXTS] == r2gen_round_trip(TEXTS, clean)
    assert decoded("x __ y.  . z", "r2gen-mimic") == "x y . . z ."  # an empty sentence, and no run of spaces


@pytest.mark.parametrize("tokenize", ["r2gen", "r2gen-mimic", "r2gen-iu", "none"])
def test_bleu4_and_rouge_l_are_coco_captions_to_the_last_bit(tokenize):
    predictions, references = zip(*PAIRS)
    bleu4, rouge_l, per_study = oracle(PAIRS, tokenize)
    ours = compute("bleu4", predictions, references, tokenize=tokenize, resamples=20)
    assert ours["bleu4"] == bleu4 and 0.02 < bleu4 < 0.9, (ours["bleu4"], bleu4)
    signed = "r2gen-mimic" if tokenize == "r2gen" else tokenize  # no dataset named: R2Gen's default, MIMIC-CXR's
    assert ours["signature"].startswith(f"bleu4:{spec('bleu4').version}|tok:{signed}|ref:closest|")
    rouge = compute("rouge_l", predictions, references, tokenize=tokenize)
    assert rouge["rouge_l_per_sample"] == per_study.tolist() and rouge["rouge_l"] == rouge_l
    assert rouge["signature"].startswith(f"rouge_l:{spec('rouge_l').version}|tok:{signed}|")


IU_IDS = (official_ids("iu-xray", "test") or [])[:len(PAIRS)]
MIMIC_IDS = (official_ids("mimic-cxr", "test") or [])[:len(PAIRS)]


@pytest.mark.parametrize(("ids", "given", "cleaner"), [
    (IU_IDS, {}, "r2gen-iu"),  # IU-Xray's study ids: R2Gen's IU-Xray cleaner
    (MIMIC_IDS, {}, "r2gen-mimic"),
    ([f"s{i}" for i in range(len(PAIRS))], {}, "r2gen-mimic"),  # of no known set: R2Gen's default
    (IU_IDS, {"tokenize": "r2gen-mimic"}, "r2gen-mimic"),  # a cleaner asked for is the one used, and signed
])
def test_the_cleaner_is_the_datasets_and_the_signature_names_it(ids, given, cleaner):
    assert len(ids) == len(PAIRS)
    predictions, references = zip(*PAIRS)
    rows = pd.DataFrame({"study_id": ids, "prediction": predictions, "reference": references})
    card = score(rows, MetricSet(["bleu4", "rouge_l"], progress=False, options={"bleu4": given, "rouge_l": given}),
                 resamples=10)
    bleu4, rouge_l, _ = oracle(PAIRS, cleaner)
    assert (card.metrics["bleu4"].value, card.metrics["rouge_l"].value) == (bleu4, rouge_l)
    assert {m.signature.settings["tok"] for m in card.metrics.values()} == {cleaner}


def test_rexrank_score_on_iu_xray_studies_cleans_and_signs_as_r2gen_does(tmp_path, capsys):
    """The command a user runs: a split of IU-Xray's study ids (synthetic text) is cleaned by IU-Xray's cleaner, and
    the printed signatures say so."""
    ids = IU_IDS[:40]
    (tmp_path / "split.json").write_text(json.dumps({i: {"section_findings": r, "section_impression": None}
                                                     for i, (_, r) in zip(ids, PAIRS)}))
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps({"study_id": i, "prediction": c}) + "\n"
                                                  for i, (c, _) in zip(ids, PAIRS)))
    assert main(["score", "--predictions", str(tmp_path / "preds.jsonl"), "--dataset", str(tmp_path / "split.json"),
                 "--task", "findings", "--metrics", "bleu4,rouge_l", "--out", str(tmp_path / "out"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "bleu4: bleu4:1|tok:r2gen-iu|" in out and f"rouge_l: rouge_l:{spec('rouge_l').version}|tok:r2gen-iu|" in out


def test_the_two_cleaners_make_other_numbers_on_these_texts():
    """Not a vacuous routing test: on the synthetic pairs (line breaks, space runs) the cleaners differ."""
    assert oracle(PAIRS, "r2gen-iu")[1] != oracle(PAIRS, "r2gen-mimic")[1]


def test_a_named_dataset_picks_the_cleaner_whatever_its_ids():
    predictions, references = zip(*PAIRS)
    rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(len(PAIRS))], "prediction": predictions,
                         "reference": references})
    card = score(rows, MetricSet(["rouge_l"], progress=False), resamples=10, dataset="iu-xray")
    assert card.metrics["rouge_l"].signature.settings["tok"] == "r2gen-iu"
    assert card.metrics["rouge_l"].value == oracle(PAIRS, "r2gen-iu")[1]


def test_corpus_bleu_is_not_the_mean_of_sentence_bleus():
    """The edge the spec exists for: one long good pair and one short bad pair; corpus BLEU weighs the long one."""
    pairs = [("no pleural effusion or pneumothorax . the heart size is normal .",) * 2, ("left effusion .", "clear .")]
    bleu4, *_ = oracle(pairs, "none")
    assert compute("bleu4", *zip(*pairs), tokenize="none", resamples=10)["bleu4"] == bleu4 > 0.5


def test_lcs_is_coco_captions_table():
    rng = random.Random(3)
    for _ in range(400):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 70))]
        b = [rng.choice("abcdef") for _ in range(rng.randint(0, 70))]
        assert lcs_length(a, b) == my_lcs(a, b), (a, b)


def test_an_empty_prediction_scores_as_coco_scores_it():
    pairs = [("", "No effusion."), ("", "")]
    for tokenize in TOKENIZE:
        _, rouge_l, per_study = oracle(pairs, tokenize)
        assert compute("rouge_l", *zip(*pairs), tokenize=tokenize)["rouge_l_per_sample"] == per_study.tolist()
    with pytest.raises(ValueError, match=f"tokenize must be one of {', '.join(TOKENIZE)}, not 'ptb'"):
        Bleu4(tokenize="ptb")
    assert set(TOKENIZE) == {"r2gen", *CLEANERS, "none"}


def test_shards_merge_to_the_whole_and_the_ci_resamples_studies():
    """Each study's counts are its own: the sums of two halves make the whole corpus' value exactly, and the CI is a
    bootstrap over studies of the same statistic."""
    predictions, references = zip(*PAIRS)
    whole = compute("bleu4", predictions, references, resamples=200)
    halves = [compute("bleu4", predictions[s], references[s], resamples=10)["per_sample"]
              for s in (slice(0, 137), slice(137, None))]
    columns = list(spec("bleu4").columns)
    sums = np.array([sum(h[c][i] for h in halves for i in range(len(h[c]))) for c in columns])
    assert float(stats.corpus_bleu(sums)) == whole["bleu4"]
    low, high = whole["bleu4_ci"]
    assert low < whole["bleu4"] < high and high - low > 0.005


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """rexrank's own result and per-study table of BLEU-4 and ROUGE-L, as the rules read them."""
    predictions, references = zip(*PAIRS[:80])
    rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(80)], "prediction": predictions,
                         "reference": references})
    card = score(rows, MetricSet(["bleu4", "rouge_l"], progress=False), resamples=50)
    result = Result(ModelInfo("m"), "ds", "test", "findings", card.metrics, {"scored": 80})
    path = card.write_per_study(tmp_path_factory.mktemp("t") / "t.parquet", "ds", "test", "findings")
    return result, check_per_study(path.read_bytes()), tuple(rows["study_id"]), card


def test_the_per_study_table_holds_integer_counts_and_passes_the_rules(made):
    result, checked, ids, card = made
    assert [c for c in checked.table.column_names if c.startswith("bleu4.")] == list(spec("bleu4").columns)
    assert all(pa.types.is_int64(checked.table.schema.field(c).type) for c in spec("bleu4").columns)
    assert per_study_problems(result, checked.table, ids, checked.about) == []
    assert all(metric_problems(name, m, 80) == [] for name, m in result.metrics.items())


def test_a_forged_bleu4_or_impossible_counts_are_refused(made):
    result, checked, ids, _ = made
    real = result.metrics["bleu4"]
    forged = replace(real, value=real.value + 0.01, mean=real.value + 0.01, low=real.low + 0.01,
                     high=real.high + 0.01)
    lifted = replace(result, metrics={**result.metrics, "bleu4": forged})
    assert metric_problems("bleu4", forged, 80) == []  # self-consistent on its face: only the counts tell
    assert per_study_problems(lifted, checked.table, ids, checked.about) == [
        f"bleu4: its value {forged.value!r} is not the {real.value!r} its per-study counts make"]
    table = checked.table
    index = table.column_names.index("bleu4.match4")
    total = table.column("bleu4.total4").to_numpy()
    inflated = table.set_column(index, "bleu4.match4", pa.array(total + 1, type=pa.int64()))  # more than there are
    assert "no pair of texts makes them" in "; ".join(per_study_problems(result, inflated, ids, checked.about))


def test_a_paired_test_compares_corpus_bleu4(made):
    *_, card = made
    other = card.per_study.copy()
    other["bleu4.match1"] = np.maximum(other["bleu4.match1"] - 1, 0)  # B matches fewer unigrams
    [comparison] = paired(card.per_study, other, trials=200, metrics=("bleu4",))
    sums = spec("bleu4").table(card.per_study).sum(axis=0), spec("bleu4").table(other).sum(axis=0)
    delta = float(stats.corpus_bleu(sums[0]) - stats.corpus_bleu(sums[1]))
    assert comparison.bootstrap.delta == delta > 0 and comparison.randomisation.delta == delta


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def bleu4_empty(case, ctx, references):
    """"no n-gram, its reference's length added (under r2gen it is ".", one token)": the one token "." matches the
    end every cleaned reference has; no 2-, 3- or 4-gram."""
    return case.own([[1, 0, 0, 0, 1, 0, 0, 0, 1, len(clean_mimic_cxr(r).split())] for r in references])


class TestBleu4Contract(MetricContract):
    case = SufficientCase(
        name="bleu4", cls=SCORERS["bleu4"], tolerance=0.0, why="counts of n-grams; the same float operations per study",
        nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
        empty_rule=bleu4_empty, variant={"tokenize": "none"},
        skips={"cache": "not cacheable (cacheable = False): its features are n-gram counts, cheaper to count again",
               "oracle": "a statistic of sums: no per-study value of coco-caption's to compare; its corpus value "
                         "equals coco-caption's Bleu(4) in test_bleu4_and_rouge_l_are_coco_captions_to_the_last_bit"})


class TestRougeLContract(MetricContract):
    case = ScorerCase(
        name="rouge_l", cls=SCORERS["rouge_l"], tolerance=0.0,
        why="an LCS of tokens; the same float operations per pair",
        nfd=DIFFERS, nfd_why="tokens are compared code point by code point: 'é' and 'e' + U+0301 are other tokens",
        # "under r2gen it is '.'": one token, matching the end of the cleaned reference
        empty_rule=lambda case, ctx, references: np.array([rouge_l_pair(["."], clean_mimic_cxr(r).split())
                                                           for r in references]),
        variant={"tokenize": "none"},
        oracle=lambda ctx, predictions, references: oracle(list(zip(predictions, references)), "r2gen")[2],
        oracle_why="coco-caption's Rouge on the texts R2Gen hands it: the same LCS and F-measure, bit for bit",
        skips={"cache": "not cacheable (cacheable = False): its features are tokens, cheaper to split again"})


@pytest.mark.parametrize("name", ["bleu2", "bleu4", "rouge_l"])
def test_every_face_says_which_convention_the_number_follows_with_radevals_name(name, capsys):
    """`rexrank metrics`, the metric's card and the board's About tab carry its spec's convention, RadEval's name for
    its own number beside."""
    from pathlib import Path

    from rexrank.board.about import about

    convention = spec(name).convention
    assert "RadEval's `" in convention and "|" not in convention  # a table cell on the card and the About tab
    assert main(["metrics"]) == 0 and convention in capsys.readouterr().out
    assert convention in about()
    card = Path(__file__).resolve().parents[2] / "metrics" / name / "README.md"
    assert convention in card.read_text(encoding="utf-8")
