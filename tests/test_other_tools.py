"""docs/metrics.md §1 says which other tools' "BLEU" is which, with a table on synthetic pairs: the table is what
benchmarks/other_tools.py computes now, and its corpus values follow the definitions it names (counts summed over the
set, one brevity penalty), worked here by hand on two pairs."""

import math
import sys
from collections import Counter

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import other_tools  # noqa: E402  (a benchmark script: its folder is no package)


def test_the_docs_table_is_what_the_script_computes():
    docs = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    section = docs.split("## §1 ")[1].split("\n## ")[0]
    assert other_tools.table() in section
    values = {tool: value for tool, _, value in other_tools.numbers()}
    assert values["RadEval `bleu`"] < values["RadEval `bleu_2`"]  # BLEU-4 below BLEU-2, as any corpus has it
    assert len({round(v, 4) for v in values.values()}) == len(values)  # four definitions, four numbers


def test_corpus_bleu_sums_counts_over_the_set_with_one_brevity_penalty():
    from nltk.translate.bleu_score import corpus_bleu

    hyps = ["the heart is normal".split(), "no effusion".split()]
    refs = ["the heart size is normal".split(), "no pleural effusion".split()]
    matched = [sum((Counter(zip(*[h[i:] for i in range(n)])) & Counter(zip(*[r[i:] for i in range(n)]))).values())
               for h, r in zip(hyps, refs) for n in (1, 2)]
    p1 = (matched[0] + matched[2]) / (4 + 2)  # unigrams matched over both reports / unigrams given
    p2 = (matched[1] + matched[3]) / (3 + 1)
    brevity = math.exp(1 - (5 + 3) / (4 + 2))  # one penalty from the summed lengths
    by_hand = brevity * math.sqrt(p1 * p2)
    assert abs(corpus_bleu([[r] for r in refs], hyps, weights=(0.5, 0.5)) - by_hand) < 1e-12
