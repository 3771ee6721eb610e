"""rexrank.ratescore_sentences against RaTEScore 0.6.0's `sentence_split` (medspacy 1.3.1, PyRuSH 1.0.13, spaCy 3.7.5).

The expected lists in CASES came from the reference venv (tests/parity/make_venv.sh); the parity test holds 2,500
synthetic, messy reports (and CASES) against what run_references.py's "rush" job answered for them there, kept by
tests/parity/make_golden.py (the reference splits each text in a fresh state: 40 s a run), and a live test sends the
first 200 to the reference venv again. All text is made up here.
"""

import hashlib
import random

import pytest
from conftest import ROOT
from fixtures import golden
from fixtures.reference_venv import run_job

pytest.importorskip("spacy")  # the models extra

from rexrank.ratescore_sentences import matches, ratescore_sentences, split  # noqa: E402

# (report, [str(s) for s in nlp(report).sents], RaTEScore's kept sentences), from the reference venv.
CASES = [
    ("1. No pleural effusion. 2. Heart size is normal. 3. No pneumothorax.",
     ["1.", "No pleural effusion.", "2. Heart size is normal.", "3. No pneumothorax."],
     ["No pleural effusion.", "2. Heart size is normal.", "3. No pneumothorax."]),
    ("1.No effusion.2.Normal heart.", ["1.No effusion.2.Normal heart."], ["1.No effusion.2.Normal heart."]),
    ("Findings discussed with Dr. Smith vs. Dr. Lee at 2 p.m. No change since Jan. 5.",
     ["Findings discussed with Dr. Smith vs.", "Dr. Lee at 2 p.m.", "No change since Jan. 5."],
     ["Findings discussed with Dr. Smith vs.", "Dr. Lee at 2 p.m.", "No change since Jan. 5."]),
    ("e.g. atelectasis. i.e. no change. Pt. is s/p CABG.",
     ["e.g. atelectasis.", "i.e. no change. Pt.", "is s/p CABG."],
     ["e.g. atelectasis.", "i.e. no change. Pt.", "is s/p CABG."]),
    ("A 1.5 cm nodule in the RUL. Stable 2.3 x 1.1 cm mass.",
     ["A 1.5 cm nodule in the RUL.", "Stable 2.3 x 1.1 cm mass."],
     ["A 1.5 cm nodule in the RUL.", "Stable 2.3 x 1.1 cm mass."]),
    ("The lungs are clear\nno effusion", ["The lungs are clear\nno effusion"], ["The lungs are clear\nno effusion"]),
    ("The lungs are clear.\nNo effusion.\n\nHeart normal.",
     ["The lungs are clear.", "\n", "No effusion.", "\n\n", "Heart normal."],
     ["The lungs are clear.", "No effusion.", "Heart normal."]),
    ("IMPRESSION:\n1. No acute process.\n2. Stable cardiomegaly.",
     ["IMPRESSION:", "\n", "1. No acute process.", "\n", "2. Stable cardiomegaly."],
     ["IMPRESSION:", "1. No acute process.", "2. Stable cardiomegaly."]),
    ("FINDINGS: The lungs are clear. IMPRESSION: No acute process.",
     ["FINDINGS: The lungs are clear.", "IMPRESSION: No acute process."],
     ["FINDINGS: The lungs are clear.", "IMPRESSION: No acute process."]),
    ("OK", ["OK"], []),  # no RuSH span: spaCy's single sentence, then too short
    ("", [], []),
    ("   ", ["   "], []),
    ("\n\t\n", ["\n\t\n"], []),
    ("***", ["***"], ["***"]),
    ("No.", ["No."], ["No."]),
    ("Lungs clear. .", ["Lungs clear.", "."], ["Lungs clear."]),  # PyRuSH >= 1.0.10 splits the stray "."
    ("No consolidation. . .", ["No consolidation. . ."], ["No consolidation. . ."]),
    ("  Heart normal.  ", ["  ", "Heart normal.", " "], ["Heart normal."]),
    ("No effusion.\xa0Heart normal.", ["No effusion.", "\xa0", "Heart normal."], ["No effusion.", "Heart normal."]),
    ("Is there a pneumothorax? No. Effusion? Small.",
     ["Is there a pneumothorax?", "No.", "Effusion?", "Small."],
     ["Is there a pneumothorax?", "No.", "Effusion?", "Small."]),
    ("No effusion (see above). Normal heart!", ["No effusion (see above).", "Normal heart!"],
     ["No effusion (see above).", "Normal heart!"]),
    ("Heart is normal.The lungs are clear.", ["Heart is normal.The lungs are clear."],
     ["Heart is normal.The lungs are clear."]),
    ("Heart is normal.\n\n1.Normal lungs.", ["Heart is normal.", "\n\n", "1.Normal lungs."],
     ["Heart is normal.", "1.Normal lungs."]),
    # RuSH ends both before the last character; spaCy splits ";" and ":" off but keeps "noted-" whole.
    ("No effusion. Lungs: clear;", ["No effusion.", "Lungs: clear", ";"], ["No effusion.", "Lungs: clear"]),
    ("No effusion. Tube noted-", ["No effusion.", "Tube noted-"], ["No effusion.", "Tube noted-"]),
    ("No effusion.\nHISTORY:", ["No effusion.", "\n", "HISTORY", ":"], ["No effusion.", "HISTORY"]),
    ("Opacité in the left lung – stable. Größe normal. “Quoted” finding.",
     ["Opacité in the left lung – stable.", "Größe normal.", "“Quoted” finding."],
     ["Opacité in the left lung – stable.", "Größe normal.", "“Quoted” finding."]),
    # whitespace runs longer than RuSH's 50 repeats
    ("Lungs clear." + " " * 70 + "Heart normal.", ["Lungs clear.", " " * 69, "Heart normal."],
     ["Lungs clear.", "Heart normal."]),
    ("Lungs clear.\n" + "\n" * 60 + "Heart normal.", ["Lungs clear.", "\n" * 61, "Heart normal."],
     ["Lungs clear.", "Heart normal."]),
    ("No acute cardiopulmonary process. " * 150, ["No acute cardiopulmonary process."] * 150,
     ["No acute cardiopulmonary process."] * 150),
]
# Split differently by the reference depending on C rand()'s state: here a fresh process's (srand(1)).
RANDOM = "pneumonia,  4.mr.\nüjones *** \n\n5. Opacity"


@pytest.mark.parametrize(("text", "sents", "kept"), CASES, ids=[repr(c[0][:30]) for c in CASES])
def test_cases_checked_with_the_reference(text, sents, kept):
    assert split(text) == sents
    assert ratescore_sentences(text) == kept


def test_rules_file_is_medspacys():
    data = (ROOT / "src" / "rexrank" / "resources" / "rush_rules.tsv").read_bytes()
    assert hashlib.md5(data).hexdigest() == "36b5caccfb2f43dc9009c377224c96b4"


def test_glibc_rand_after_srand_1_and_one_draw():
    words = list(matches._fresh_rand(1))
    draws = []
    for _ in range(3):
        words.append((words[-31] + words[-3]) & 0xFFFFFFFF)
        draws.append(words[-1] >> 1)
    assert draws == [846930886, 1681692777, 1714636915]  # glibc rand()'s 2nd to 4th after srand(1)


@pytest.mark.parametrize(("seed", "merged"), [(1, False), (2, True), (3, True), (5, False), (6, True), (8, False)])
def test_the_overlap_treap_follows_rand(monkeypatch, seed, merged):
    """The reference, run after srand(seed) and one rand(), gives either list; the emulated treap follows it."""
    monkeypatch.setattr(matches, "_SEED", seed)
    head = ["pneumonia,  4.mr.\nüjones"] if merged else ["pneumonia,  4.mr.", "üjones"]
    assert ratescore_sentences(RANDOM) == [*head, "*** \n\n5. Opacity"]


SENTENCES = [
    "The lungs are clear without focal consolidation", "No pleural effusion or pneumothorax is seen",
    "Heart size is normal", "Mild cardiomegaly is present", "There is a small left pleural effusion",
    "Patchy opacity in the right lower lobe, concerning for pneumonia", "A 1.5 cm nodule projects over the RUL",
    "Compared to the prior study from 10/12/2020 there is no change", "ET tube tip is 5.2 cm above the carina",
    "Dr. Smith was notified at 2:30 p.m. by phone", "Findings discussed with Dr. Lee vs. Dr. Kim",
    "AP/PA and lateral views of the chest", "No acute cardiopulmonary process", "Port-a-cath in place",
    "S/p CABG with intact sternotomy wires", "e.g. atelectasis or pneumonia", "i.e. no change",
    "Lines and tubes as above (see prior report)", "Low lung volumes (limited exam)", "x-ray shows no pneumothorax",
    "Right IJ catheter tip at the cavoatrial junction", "Opacity measures 2 x 3 cm", "Osteopenia", "Unchanged",
    "OK", "No", "The patient is a 65 yo M", "Pt. is s/p median sternotomy", "Nodule (1.2 cm) in RLL", "No. 2 catheter",
    "Fig. 1 shows it", "b.i.d. dosing noted", "q.d. follow up", "There are ___ views", "Lungs: clear", "Mr. Jones",
    "Comparison: none", "Technique: PA and lateral", "Heart\tsize\tnormal", "Interval improvement",
]
HEADERS = ["FINDINGS:", "IMPRESSION:", "Findings:", "Impression:", "HISTORY:", "INDICATION:", "COMPARISON:",
           "TECHNIQUE:", "Reason for exam:", "REASON FOR EXAM:", "FINAL REPORT", "Chief Complaint:",
           "Admitting Diagnosis:", "Sex:", "Signed", "Date of Birth:", "Indication:", "REASON:"]
ENDINGS = [".", ".", ".", "", "", "?", "!", ". .", "..", "...", " .", ";", ":", ",", ".)", ").", '."', '".', "*",
           " ***", "-", ".-", "!!", "?.", ". ]", "]."]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\n\n", "\n \n", "\t", " \n", "\n  ", "", "\r\n", "\xa0", "   ", "\n\n\n",
              " \t ", "\n-", "\n* ", "\n• ", " - ", "\n# "]
ODD = ["é", "°", "µ", "–", "—", "“", "”", "’", "\xa0", "\u200b", "ü", "×", "±", "≥", "中", "§", "·", "…", "\u2028",
       "\x0b", "\x0c", "\x85", "ǅ", "Ⅻ", "ß", "İ", "ﬁ", "😀", "\x1c"]
PUNCT = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def messy_reports(n: int, seed: int) -> list[str]:
    """Synthetic radiology-like reports with the mess real ones have and worse: numbering, headers, stray
    punctuation, odd spacing and case, abbreviations, Unicode, long repeats."""
    rng = random.Random(seed)

    def word(w):
        if rng.random() >= 0.16:
            return w
        return rng.choice([w.upper(), w.lower(), w.capitalize(), w + rng.choice(PUNCT), rng.choice(PUNCT) + w,
                           w + rng.choice(ODD), rng.choice(ODD) + w, w + "." + rng.choice(["The", "the", "5", '"']),
                           w + rng.choice(["'s", "n't"])])

    def sentence():
        s = rng.choice(SENTENCES)
        s = s.upper() if rng.random() < 0.15 else s.lower() if rng.random() < 0.12 else s
        words = [word(w) for w in s.split(" ")] if rng.random() < 0.5 else s.split(" ")
        return rng.choice([" "] * 12 + ["  ", "\n", "\t", " \n"]).join(words) + rng.choice(ENDINGS)

    out = []
    for _ in range(n):
        numbered, k, text = rng.random() < 0.3, 0, ""
        for _ in range(rng.choice([1, 1, 2, 3, 4, 5, 6, 8, 12])):
            if rng.random() < 0.12:
                part = rng.choice(HEADERS)
            else:
                part = sentence()
                if numbered and rng.random() < 0.8:
                    k += 1
                    part = rng.choice([f"{k}. ", f"{k}.", f"{k}) ", f"({k}) ", f"{k} ", f"\n{k}. ", "- ", "* "]) + part
            text += part + rng.choice(SEPARATORS)
        text = text.strip() if rng.random() < 0.2 else rng.choice(SEPARATORS) + text if rng.random() < 0.06 else text
        out.append(text * rng.randint(5, 20) if rng.random() < 0.02 else text)
    return out


def rush_texts() -> list[str]:
    """What the parity tests send to RaTEScore's sentence_split: CASES, RANDOM and 2,500 messy reports."""
    return [c[0] for c in CASES] + [RANDOM] + messy_reports(2500, seed=2024)


def kept_sentences(texts: list[str]) -> list[list[str]]:
    """RaTEScore's sentences for `texts`, as tests/parity/make_golden.py kept them from the reference venv."""
    return golden.read("rush-sentences", golden.fingerprint({"rush": {"texts": texts}}, {}))["rush_sentences"]


@pytest.mark.slow
def test_parity_with_ratescore_sentence_split():
    texts = rush_texts()
    expected = kept_sentences(texts)
    wrong = [(text, want, ratescore_sentences(text)) for text, want in zip(texts, expected)
             if ratescore_sentences(text) != want]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:2]}"


LIVE = len(CASES) + 1 + 200  # CASES, RANDOM and the first 200 messy reports


def test_the_kept_sentences_are_ratescores_own_and_ours(reference_python, tmp_path):
    """The reference venv, live, on the first texts: it answers what was kept, and ours agree with it."""
    texts = rush_texts()[:LIVE]
    live = run_job(reference_python, tmp_path, {"rush": {"texts": texts}})["rush_sentences"]
    assert live == kept_sentences(rush_texts())[:LIVE]
    wrong = [(text, want, ratescore_sentences(text)) for text, want in zip(texts, live)
             if ratescore_sentences(text) != want]
    assert not wrong, f"{len(wrong)} of {len(texts)} differ, e.g. {wrong[:2]}"
