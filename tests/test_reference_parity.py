"""Parity with the reference packages on transformers 4 (slow tokenizers), in their own venv
(tests/parity/make_venv.sh), on the same tiny random weights: bert-score with the leading-space RoBERTa
encoding of the pinned CXR-Report-Metric environment (see make_venv.sh on 0.3.11 vs 0.3.13), f1chexbert
0.0.2 and RaTEScore 0.6.0, run live (`answers`); radgraph 0.1.18's graphs and rewards, discrete, from the answers
tests/parity/make_golden.py kept (its post-processing is quadratic in the random model's spans: 50 s of the run).
They cannot share a process with transformers 5; files carry the job and the answers.
"""

import numpy as np
import pytest
from fixtures import golden
from fixtures.reference_venv import hf_cache_entry, run_job
from fixtures.reports import reports

from rexrank.scorers.bertscore import BASELINE, LAYER, BertScore, clean
from rexrank.scorers.radgraph import Graph, RadGraphF1, tokenize_report
from rexrank.scorers.ratescore import RaTEScore
from rexrank.scorers.semb import SembScore, binary_labels

CANDIDATES = reports(40, seed=11, long_every=13) + ["", "   ", "Heart size is normal."]
REFERENCES = reports(40, seed=12, long_every=19) + ["Mild edema.", "", "HEART  SIZE IS NORMAL.\n"]
TEXTS = reports(40, seed=13, long_every=17) + ["", "No   acute\ncardiopulmonary process."]
GRAPH_TEXTS = reports(20, seed=14) + [" ".join(reports(70, seed=15))[:3000]] + [  # 21st: > 510 wordpieces
    "", "a", ".", "\u200b hernia", "ÉMILE's naïve café x-ray;  résumé",
    "1.5-cm nodule in the R/L lung; e.g., (see above)!"]

RATE_TEXTS = reports(30, seed=21, long_every=11) + [
    "effusion", "!!! ???", "ÉMILE's naïve café x-ray; résumé", "No.\n\n1. Mild edema. 2. No effusion.",
    "\u00a0ﬁbrosis and ０ nodules vs. prior", "FINDINGS: Heart size is normal.  IMPRESSION: No acute process."]
RATE_CANDIDATES = reports(36, seed=22) + RATE_TEXTS[-6:]  # every report keeps a sentence: 0.6.0 stays aligned
RATE_REFERENCES = reports(36, seed=23) + RATE_TEXTS[-3:] + reports(3, seed=24)


def radgraph_job(model) -> dict:
    """radgraph 0.1.18's job on GRAPH_TEXTS (its graphs, and F1RadGraph's rewards of the first ten against the next)."""
    return {"model": str(model), "texts": GRAPH_TEXTS, "reward_pairs": [GRAPH_TEXTS[:10], GRAPH_TEXTS[10:20]]}


@pytest.fixture(scope="module")
def answers(reference_python, tiny_roberta, tiny_bert_base, tiny_chexbert, tiny_rate_ner, tiny_biolord,
            tmp_path_factory):
    work = tmp_path_factory.mktemp("reference")
    baseline = work / "baseline.tsv"
    row = f"{BASELINE['P']},{BASELINE['R']},{BASELINE['F']}"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{layer},{row}\n" for layer in range(7)))
    hf_cache_entry(work / "hf", "bert-base-uncased", tiny_bert_base)
    (work / "xdg" / "chexbert").mkdir(parents=True)
    (work / "xdg" / "chexbert" / "chexbert.pth").write_bytes(tiny_chexbert.read_bytes())
    job = {"bertscore": {"model": str(tiny_roberta), "layer": LAYER, "baseline": str(baseline),
                         "candidates": CANDIDATES, "references": REFERENCES},
           "f1chexbert": {"texts": TEXTS},
           "ratescore": {"ner": str(tiny_rate_ner), "encoder": str(tiny_biolord), "texts": RATE_TEXTS,
                         "candidates": RATE_CANDIDATES, "references": RATE_REFERENCES}}
    return run_job(reference_python, work, job)


@pytest.fixture(scope="module")
def radgraph_answers(tiny_radgraph, tiny_bert_base):
    """radgraph 0.1.18's answers on these weights and texts, as tests/parity/make_golden.py kept them."""
    job = radgraph_job(tiny_radgraph)
    return golden.read("radgraph-0.1.18", golden.fingerprint(job, {"radgraph": tiny_radgraph,
                                                                   "bert-base-uncased": tiny_bert_base}))


def test_tokens_equal_the_slow_roberta_tokenizer_of_transformers_4(local_models, answers):
    texts = [clean(t) for t in CANDIDATES + REFERENCES]
    assert BertScore(progress=False).encoder.token_ids(texts) == answers["bertscore_tokens"]


@pytest.mark.parametrize("idf", [False, True])
def test_bertscore_equals_bert_score_on_transformers_4(local_models, answers, idf):
    ours = BertScore(idf=idf, progress=False)(CANDIDATES, REFERENCES)
    expected = np.array(answers[f"bertscore_idf={idf}"])
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)  # float32 rounding, times 6.55 by rescale
    assert ours[40] == expected[40] == pytest.approx(-5.5502, abs=5e-5)  # the empty candidate


def test_without_the_leading_space_equals_bert_score_0_3_11_on_transformers_4(local_models, answers):
    """bert-score 0.3.11, as CXR-Report-Metric pins it, run on transformers >= 4.17 (RobertaTokenizer no longer a
    GPT2Tokenizer): no leading space, which `prefix_space=False` reproduces (docs/metrics.md §2)."""
    texts = [clean(t) for t in CANDIDATES + REFERENCES]
    tokens = BertScore(prefix_space=False, progress=False).encoder.token_ids(texts)
    assert tokens == answers["bertscore_0.3.11_tokens"] != answers["bertscore_tokens"]
    for idf in (False, True):
        ours = BertScore(prefix_space=False, idf=idf, progress=False)(CANDIDATES, REFERENCES)
        np.testing.assert_allclose(ours, answers[f"bertscore_0.3.11_idf={idf}"], rtol=1e-6, atol=1e-6)
        assert not np.allclose(ours, answers[f"bertscore_idf={idf}"], atol=1e-3)


def test_labels_equal_f1chexbert_0_0_2(local_models, answers):
    ours = [binary_labels(classes).tolist() for _, classes in SembScore(progress=False).features(TEXTS)]
    assert ours == answers["f1chexbert_labels"]
    assert 0 < np.mean(ours) < 1  # the fixture's labels are not all one value


@pytest.mark.slow
def test_graphs_equal_radgraph_0_1_18(local_models, radgraph_answers):
    theirs = [Graph.from_reference_json(radgraph_answers["radgraph"][str(i)]) for i in range(len(GRAPH_TEXTS))]
    model = RadGraphF1(progress=False).model
    ours = model.graphs(GRAPH_TEXTS, progress=False)
    assert ours == theirs
    assert len(model._pieces(tokenize_report(GRAPH_TEXTS[20]))[0]) > 510  # the folded path was compared too
    assert sum(len(g.relations) for g in ours) > 10  # the fixture predicts relations, not only entities


@pytest.mark.slow
def test_reward_levels_equal_f1radgraph_0_1_18(local_models, radgraph_answers):
    from rexrank.scorers.radgraph import REWARD_LEVELS, reward

    graphs = RadGraphF1(progress=False).model.graphs(GRAPH_TEXTS[:20], progress=False)
    for level, theirs in zip(REWARD_LEVELS, radgraph_answers["f1radgraph"]):
        ours = [reward(c, r, level) for c, r in zip(graphs[:10], graphs[10:20])]
        assert ours == pytest.approx(theirs, abs=1e-12), level
    assert any(0 < x < 1 for x in radgraph_answers["f1radgraph"][2])


def test_ratescore_entities_equal_ratescore_0_6_0(local_models, answers):
    ours = RaTEScore(progress=False).model.entities(RATE_TEXTS, progress=False)
    assert ours == [[tuple(e) for e in report] for report in answers["ratescore_entities"]]
    assert len({kind for report in ours for _, kind in report}) == 5  # every type occurs


def test_ratescore_entity_vectors_are_bit_for_bit_ratescore_0_6_0s(local_models, answers):
    # bitwise, not close: the per-report vectors decide near ties, and CPU topk breaks exact ties (a repeated
    # entity text) by the row's other values
    scorer = RaTEScore(progress=False)
    for (texts, _, _), theirs in zip(scorer.features(RATE_TEXTS), answers["ratescore_embeddings"]):
        vectors = scorer.model.encoder.embed(texts.tolist())
        np.testing.assert_array_equal(vectors, np.array(theirs, dtype=np.float32).reshape(vectors.shape))


def test_ratescore_vectors_of_distinct_entities_differ_from_per_report_ones_by_rounding(local_models, answers):
    for (_, _, vectors), theirs in zip(RaTEScore(progress=False).features(RATE_TEXTS), answers["ratescore_embeddings"]):
        np.testing.assert_allclose(vectors, np.array(theirs, dtype=np.float32).reshape(vectors.shape), atol=1e-5)


def test_ratescore_equals_ratescore_0_6_0(local_models, answers):
    scorer = RaTEScore(progress=False)
    ours = scorer(RATE_CANDIDATES, RATE_REFERENCES)
    near_ties = scorer.rescored  # rescored with per-report vectors: the reference's own bits and ops
    assert 0 < near_ties < len(ours)  # the tiny encoder's vectors are close: both paths are taken
    np.testing.assert_allclose(ours, answers["ratescore"], rtol=0, atol=1e-6)
    assert len(set(np.round(ours, 6))) > 20  # not a constant
