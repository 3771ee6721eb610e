"""BLEU-4 over the corpus and ROUGE-L, as the report-generation literature's evaluation code computes them
(docs/metrics.md §11): coco-caption's scorers (`pycocoevalcap` 1.2 `Bleu(4)` and `Rouge()`) on the texts R2Gen's
trainer hands to its `modules/metrics.py`: each report cleaned by the dataset's cleaner (zhjohnchan/R2Gen
`modules/tokenizers.py`: `clean_report_iu_xray` for IU-Xray, `clean_report_mimic_cxr` for every other dataset; the
cleaning R2Gen's descendants kept), then through its Tokenizer and back (`decode`: the cleaned tokens joined by single
spaces). R2Gen's vocabulary maps a token seen fewer than 3 times in its training reports to <unk>, and its reports
are cut at `max_seq_length` tokens: both are its model's, not the metric's, and are not applied (§11 measures them).

- BLEU-4 is a corpus statistic: each study keeps its sufficient statistics (the clipped 1- to 4-gram matches, the
  hypothesis' 1- to 4-gram counts, its length and the reference's: `bleu_scorer.cook_test` with one reference, whose
  length is then the "closest"), and the value is `stats.corpus_bleu` of their sums, resampled study by study for the
  CI and mergeable across shards. Tokens: `str.split()`, as `precook`.
- ROUGE-L is the mean over studies of each pair's LCS F-measure with beta 1.2; a pair with no common token scores 0.
  Tokens: `str.split(" ")`, as `Rouge.calc_score`: of R2Gen's single-spaced texts, the cleaned tokens; of texts as
  given, runs of spaces make empty tokens there, so here.

Tokenisation (`tokenize`, signed as the cleaner that made the number): "r2gen" by default, R2Gen's cleaner for the
dataset scored (the scorecard says which: `for_dataset`; MIMIC-CXR's, R2Gen's default, where none is known),
because the scorers split on spaces only and free text glues punctuation to words ("effusion." is not "effusion"):
the cleaning lower-cases, splits sentences at ". ", drops punctuation and joins the sentences with " . ".
"r2gen-mimic" and "r2gen-iu" name one cleaner whatever the dataset; "none" hands the texts to the scorers as they
are, as a caller of pycocoevalcap that does not clean them does.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from rexrank.scorers.base import Scorer
from rexrank.signature import Signature

N = 4  # BLEU-4
BETA = 1.2  # coco-caption's ROUGE-L, "updated based on discussion with Hovey"

# R2Gen's cleaners, step by step: each .replace in its chains, in its order (repeated where it repeats one).
_LIST_NUMBERS = (("1. ", ""), (". 2. ", ". "), (". 3. ", ". "), (". 4. ", ". "), (". 5. ", ". "), (" 2. ", ". "),
                 (" 3. ", ". "), (" 4. ", ". "), (" 5. ", ". "))
_MIMIC_CXR_STEPS = (("\n", " "), *[("__", "_")] * 7, *[("  ", " ")] * 6, *[("..", ".")] * 8, *_LIST_NUMBERS)
_IU_XRAY_STEPS = (*[("..", ".")] * 3, *_LIST_NUMBERS)  # no line breaks, "__" or space runs handled: IU has none
# Its sentence cleaner's class: `:-\[` is a range, so : ; < = > ? @ and the capitals go too.
_PUNCTUATION = re.compile(r"[.,?;*!%^&_+():-\[\]{}]")


def _clean(text: str, steps: tuple[tuple[str, str], ...]) -> str:
    """Lower-case sentences without punctuation, joined by " . " and ended by " .". Empty sentences are kept, as in
    R2Gen (its filter compares a string with a list)."""
    for old, new in steps:
        text = text.replace(old, new)
    sentences = text.strip().lower().split(". ")
    cleaned = [_PUNCTUATION.sub("", s.replace('"', "").replace("/", "").replace("\\", "").replace("'", "").strip()
                                .lower()) for s in sentences]
    return " . ".join(cleaned) + " ."


def clean_mimic_cxr(text: str) -> str:
    """A report as R2Gen's `clean_report_mimic_cxr` leaves it."""
    return _clean(text, _MIMIC_CXR_STEPS)


def clean_iu_xray(text: str) -> str:
    """A report as R2Gen's `clean_report_iu_xray` leaves it: the same sentence cleaning after fewer replacements."""
    return _clean(text, _IU_XRAY_STEPS)


CLEANERS = {"r2gen-mimic": clean_mimic_cxr, "r2gen-iu": clean_iu_xray}
TOKENIZE = ("r2gen", *CLEANERS, "none")
# R2Gen's Tokenizer: `iu_xray` gets its own cleaner, every other dataset MIMIC-CXR's (rexrank's catalog names).
BY_DATASET = {"iu-xray": "r2gen-iu"}
DEFAULT_CLEANER = "r2gen-mimic"


def decoded(text: str, cleaner: str) -> str:
    """The text R2Gen's metrics receive for a report: `decode(tokenize(report))`, the cleaned report's tokens
    (`str.split()`) joined by single spaces, without the <unk>s and the cut its vocabulary and length make."""
    return " ".join(CLEANERS[cleaner](text).split())


COCO_CAPTION = """\
@article{chen2015microsoft,
  title={Microsoft COCO Captions: Data Collection and Evaluation Server},
  author={Chen, Xinlei and Fang, Hao and Lin, Tsung-Yi and Vedantam, Ramakrishna and Gupta, Saurabh and
          Doll{\\'a}r, Piotr and Zitnick, C Lawrence},
  journal={arXiv preprint arXiv:1504.00325}, year={2015}
}
@inproceedings{chen2020generating,
  title={Generating Radiology Reports via Memory-driven Transformer},
  author={Chen, Zhihong and Song, Yan and Chang, Tsung-Hui and Wan, Xiang},
  booktitle={EMNLP}, year={2020}
}
"""
CODEBASE = ("https://github.com/salaniz/pycocoevalcap", "https://github.com/zhjohnchan/R2Gen")


class _Cleaned(Scorer):
    """A coco-caption scorer: its one option is how the texts are prepared before it splits them."""

    codebase = CODEBASE
    option_texts = {"tokenize": "\"r2gen\" (R2Gen's cleaner), \"r2gen-mimic\", \"r2gen-iu\" or \"none\""}

    def __init__(self, tokenize: str = "r2gen", **runtime):
        """`tokenize`: "r2gen" (R2Gen's cleaning for the dataset, then its decode, then the scorer's split),
        "r2gen-mimic" or "r2gen-iu" (that cleaner whatever the dataset) or "none" (the texts as given)."""
        if tokenize not in TOKENIZE:
            raise ValueError(f"tokenize must be one of {', '.join(TOKENIZE)}, not {tokenize!r}")
        super().__init__(**runtime)
        self.tokenize = tokenize
        self.cleaner = DEFAULT_CLEANER if tokenize == "r2gen" else tokenize  # what is signed: tok:<cleaner>

    def for_dataset(self, dataset: str | None) -> _Cleaned:
        """This scorer as R2Gen scores `dataset`'s texts (a catalog name): its cleaner, unless one was asked for."""
        if self.tokenize != "r2gen":
            return self
        made = copy.copy(self)
        made.cleaner = BY_DATASET.get(dataset or "", DEFAULT_CLEANER)
        return made

    def prepared(self, texts: Sequence[str]) -> list[str]:
        return [str(t) if self.cleaner == "none" else decoded(str(t), self.cleaner) for t in texts]


class Grams(NamedTuple):
    length: int
    counts: Counter  # every 1- to N-gram


def grams(text: str) -> Grams:
    words = text.split()
    return Grams(len(words), Counter(tuple(words[i:i + k]) for k in range(1, N + 1) for i in range(len(words) - k + 1)))


def bleu_counts(candidate: Grams, reference: Grams) -> list[int]:
    """One study's sufficient statistics (`cook_test` with one reference): N clipped matches, N counts, two lengths."""
    correct = [0] * N
    for gram, count in candidate.counts.items():
        available = reference.counts.get(gram)
        if available:
            correct[len(gram) - 1] += min(available, count)
    guess = [max(0, candidate.length - k + 1) for k in range(1, N + 1)]
    return [*correct, *guess, candidate.length, reference.length]


class Bleu4(_Cleaned):
    name = "bleu4"
    title = "BLEU-4"
    version = "1"
    statistic = "corpus_bleu"
    published = {"tok": None, "ref": None}  # ReXrank publishes no BLEU-4: nothing to compare with
    citation = """\
@inproceedings{papineni2002bleu,
  title={BLEU: a Method for Automatic Evaluation of Machine Translation},
  author={Papineni, Kishore and Roukos, Salim and Ward, Todd and Zhu, Wei-Jing},
  booktitle={ACL}, year={2002}
}
""" + COCO_CAPTION
    columns = {**{f"bleu4.match{k}": "count" for k in range(1, N + 1)},
               **{f"bleu4.total{k}": "count" for k in range(1, N + 1)}, "bleu4.length": "count",
               "bleu4.reference": "count"}
    bounds = (0.0, 1.0)
    empty_prediction = ("no n-gram, its reference's length added: the corpus' brevity penalty falls (under r2gen "
                        "it is \".\", one token)")
    summary = ("BLEU-4 over the corpus, as coco-caption computes it: 1- to 4-gram matches and lengths summed over "
               "studies, then their geometric mean precision times the brevity penalty.")
    convention = ("coco-caption's Bleu(4) (pycocoevalcap 1.2) on the texts R2Gen's trainer hands it: each report "
                  "cleaned by R2Gen's cleaner for its dataset (IU-Xray's for IU-Xray, MIMIC-CXR's otherwise; signed "
                  "tok:) and rejoined by its decode. RadEval's `bleu` is coco-caption's BLEU-4 on the raw text "
                  "(whitespace tokens, case and punctuation kept): another number.")
    section = "§11"
    demo = 0.10  # the demo's value at quality 1 (a column a visitor adds)

    def features(self, texts: Sequence[str]) -> list[Grams]:
        return [grams(t) for t in self.prepared(texts)]

    def score(self, candidates: Sequence[Grams], references: Sequence[Grams]) -> np.ndarray:
        """(studies, 10) counts, in `columns`' order."""
        rows = [bleu_counts(c, r) for c, r in zip(candidates, references, strict=True)]
        return np.array(rows, dtype=np.float64).reshape(-1, len(self.columns))

    def signature(self) -> Signature:
        return Signature(self.name, self.version, settings={"tok": self.cleaner, "ref": "closest"})

    @staticmethod
    def check(columns) -> list[str]:
        """What no text can make (the rules' test of a submitted table): a negative count, n-gram counts that are not
        its length's, more matches than the hypothesis or the reference has n-grams."""
        counts = np.column_stack([np.asarray(columns[c], dtype=np.int64) for c in Bleu4.columns])
        match, total, length, reference = counts[:, :N], counts[:, N:2 * N], counts[:, 2 * N], counts[:, 2 * N + 1]
        shift = np.arange(N)[None, :]
        if ((counts < 0).any() or (total != np.maximum(0, length[:, None] - shift)).any() or (match > total).any()
                or (match > np.maximum(0, reference[:, None] - shift)).any()):
            return ["bleu4's counts: no pair of texts makes them (negative, more matches than n-grams, or n-gram "
                    "counts that are not the length's)"]
        return []


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence, bit-parallel (Hyyrö 2004): one pass over b with a's positions of
    each token as the bits of an integer; the same number as coco-caption's table, in O(|a| |b| / 64)."""
    positions: dict[str, int] = {}
    for i, token in enumerate(a):
        positions[token] = positions.get(token, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for token in b:
        u = v & positions.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def rouge_l_pair(candidate: list[str], reference: list[str]) -> float:
    """`Rouge.calc_score` with one reference: LCS precision and recall, their F-measure weighted by BETA."""
    lcs = lcs_length(reference, candidate)
    precision, recall = lcs / float(len(candidate)), lcs / float(len(reference))
    if precision == 0 or recall == 0:
        return 0.0
    return ((1 + BETA ** 2) * precision * recall) / float(recall + BETA ** 2 * precision)


class RougeL(_Cleaned):
    name = "rouge_l"
    title = "ROUGE-L"
    version = "2"  # 1 split R2Gen's cleaned text as it was, not as its decode gives it: runs of spaces made '' tokens
    published = {"tok": None, "beta": None}  # ReXrank publishes no ROUGE-L: nothing to compare with
    citation = """\
@inproceedings{lin2004rouge,
  title={ROUGE: A Package for Automatic Evaluation of Summaries},
  author={Lin, Chin-Yew},
  booktitle={Text Summarization Branches Out}, year={2004}
}
""" + COCO_CAPTION
    bounds = (0.0, 1.0)
    empty_prediction = "0, no token in common (under r2gen it is \".\", which its reference's end matches)"
    summary = "ROUGE-L as coco-caption computes it: the F-measure (beta 1.2) of the longest common token subsequence."
    convention = ("coco-caption's Rouge() (pycocoevalcap 1.2: LCS F-measure with beta 1.2, no stemming) on R2Gen's "
                  "cleaned and decoded tokens (signed tok:), the mean over studies. RadEval's `rougeL` is "
                  "rouge-score's F1 (beta 1) with the Porter stemmer on its own tokens (lower-cased, "
                  "non-alphanumerics dropped), as is CXRMate-2's `rouge_l`: another number.")
    section = "§11"
    demo = 0.30  # the demo's value at quality 1 (a column a visitor adds)

    def features(self, texts: Sequence[str]) -> list[list[str]]:
        return [t.split(" ") for t in self.prepared(texts)]

    def score(self, candidates: Sequence[list[str]], references: Sequence[list[str]]) -> np.ndarray:
        return np.fromiter((rouge_l_pair(c, r) for c, r in zip(candidates, references, strict=True)),
                           dtype=np.float64, count=len(candidates))

    def signature(self) -> Signature:
        return Signature(self.name, self.version, settings={"tok": self.cleaner, "beta": str(BETA)})
