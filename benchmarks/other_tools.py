"""Which BLEU is which: the numbers other tools report as "BLEU" beside rexrank's `bleu2`, on the same synthetic pairs.

    python benchmarks/other_tools.py [--pairs 20]

RadEval (jbdel/RadEval) reports `bleu` and, with details, `bleu_2`: coco-caption's BleuScorer over the whole set,
i.e. corpus BLEU-4 and corpus BLEU-2 (n-gram counts summed over all reports, one brevity penalty over the summed
lengths, tokens split at whitespace, case kept), called `RadEval(refs, hyps)`: references first. rexrank's `bleu2`
is ReXrank's: the mean over reports of each report's sentence BLEU-2 (CXR-Report-Metric's tokens, NLTK's method1
smoothing, docs/metrics.md §1), called with the predictions first. The corpus numbers are computed here with NLTK's
`corpus_bleu` from those definitions (RadEval is never a dependency: it vendors other packages and downloads at
import); coco-caption's 1e-15/1e-9 guards against a zero count move them by less than 1e-8. docs/metrics.md §1 prints
this table, and tests/test_other_tools.py holds the two to each other.
"""

from __future__ import annotations

import argparse

from nltk.translate.bleu_score import corpus_bleu
from synthetic import pairs

from rexrank.scorers.bleu import Bleu2, tokenize

PAIRS, SEED = 20, 36


def numbers(n: int = PAIRS, seed: int = SEED) -> list[tuple[str, str, float]]:
    """(what the tool calls it, what it is, its value) on n synthetic (prediction, reference) pairs."""
    predictions, references = pairs(n, seed)
    words = [[r.split()] for r in references], [p.split() for p in predictions]
    return [
        ("RadEval `bleu`", "corpus BLEU-4, whitespace tokens, `RadEval(refs, hyps)`",
         corpus_bleu(*words, weights=(0.25,) * 4)),
        ("RadEval `bleu_2`", "corpus BLEU-2, whitespace tokens, `RadEval(refs, hyps)`",
         corpus_bleu(*words, weights=(0.5, 0.5))),
        ("rexrank `bleu2` (ReXrank's BLEU-2)", "mean of per-report BLEU-2, ReXrank's tokens, "
         "`compute(predictions=, references=)`", float(Bleu2()(predictions, references).mean())),
        ("(neither: for comparison)", "corpus BLEU-2 on ReXrank's tokens",
         corpus_bleu([[tokenize(r)] for r in references], [tokenize(p) for p in predictions], weights=(0.5, 0.5))),
    ]


def table(n: int = PAIRS, seed: int = SEED) -> str:
    rows = [f"| {tool} | {what} | {value:.4f} |" for tool, what, value in numbers(n, seed)]
    return "\n".join(["| reported as | what it is | value |", "|---|---|---:|", *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    print(f"{args.pairs} synthetic pairs (benchmarks/synthetic.py, seed {args.seed})\n")
    print(table(args.pairs, args.seed))


if __name__ == "__main__":
    main()
