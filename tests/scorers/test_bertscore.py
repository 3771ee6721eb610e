"""BERTScore: parity with the bert-score package on the same tiny random RoBERTa, and the reference's rules."""

import json
import re
import shutil

import numpy as np
import pytest
from fixtures.reports import reports

from rexrank.scorers import compute
from rexrank.scorers.bertscore import BASELINE, BertScore, idf_weights, pair_scores, rescale

bert_score = pytest.importorskip("bert_score")

CANDIDATES = reports(45, seed=1, long_every=13) + ["Heart size is normal.", "HEART SIZE IS NORMAL."]
REFERENCES = reports(45, seed=2, long_every=17) + ["Mild edema.", "Heart  size is normal.\nNo edema."]


@pytest.fixture(scope="module")
def oracle_model(tiny_roberta, tmp_path_factory):
    """The same weights for bert-score, whose tokenizer must be *loaded* with add_prefix_space on transformers 5
    (it passes the flag to `encode`, which ignores it), plus a baseline file with the distilroberta-base row."""
    folder = tmp_path_factory.mktemp("oracle") / "roberta"
    shutil.copytree(tiny_roberta, folder)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps(settings | {"add_prefix_space": True}))
    baseline = folder.parent / "baseline.tsv"
    row = f"{BASELINE['P']},{BASELINE['R']},{BASELINE['F']}"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{layer},{row}\n" for layer in range(7)))
    return str(folder), str(baseline)


def oracle(oracle_model, candidates, references, idf, rescale_with_baseline=True):
    """CXR-Report-Metric: collapse runs of spaces, then bert-score (layer 5, rescaled)."""
    folder, baseline = oracle_model
    squeeze = [re.sub(r" +", " ", t) for t in candidates], [re.sub(r" +", " ", t) for t in references]
    p, r, f = bert_score.score(*squeeze, model_type=folder, num_layers=5, idf=idf, batch_size=64, lang="en",
                               rescale_with_baseline=rescale_with_baseline, baseline_path=baseline)
    return p.numpy(), r.numpy(), f.numpy()


@pytest.mark.parametrize("idf", [False, True])
def test_per_pair_parity_with_bert_score(local_models, oracle_model, idf):
    scorer = BertScore(idf=idf, progress=False)
    ours = scorer(CANDIDATES, REFERENCES)
    _, _, expected = oracle(oracle_model, CANDIDATES, REFERENCES, idf)
    # Rescaling multiplies float32 rounding by 1/(1-b) = 6.55: one float32 ulp of a value near -4 is 4.8e-7.
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-6)
    features = scorer.features(CANDIDATES + REFERENCES)
    raw = scorer.score_prf(features[:len(CANDIDATES)], features[len(CANDIDATES):])
    p, r, f = oracle(oracle_model, CANDIDATES, REFERENCES, idf, rescale_with_baseline=False)
    np.testing.assert_allclose(raw, np.stack([p, r, f], axis=1), rtol=0, atol=1e-6)
    assert max(len(ids) for ids, _ in features) == 512  # the long reports were truncated, as bert-score does


def test_tokenisation_is_bert_scores_with_a_leading_space(local_models, oracle_model):
    from bert_score.utils import get_tokenizer, sent_encode

    theirs = get_tokenizer(oracle_model[0], use_fast=False)
    ours = BertScore(progress=False).encoder
    texts = CANDIDATES + REFERENCES + ["  padded  ", "x", "Line one.\n\nLine two."]
    assert ours.token_ids(texts) == [sent_encode(theirs, t) for t in texts]
    first = ours.token_ids(["Heart"])[0][1]
    assert ours.tokenizer.convert_ids_to_tokens(first).startswith("Ġ")  # the prefix space is there


def test_empty_text_scores_raw_zero_and_rescaled_minus_5_5502(local_models):
    scorer = BertScore(progress=False)
    scores = scorer(["", "   ", "Heart size is normal."], ["Mild edema.", "Mild edema.", ""])
    assert scores.tolist() == [pytest.approx(-5.5502, abs=5e-5)] * 3
    assert rescale(0.0, BASELINE["F"]) == scores[0]


def test_math_on_hand_made_features():
    """Two tokens per text besides <s></s>; special tokens are match targets but weigh 0."""
    ids = np.array([0, 10, 11, 2])
    unit = np.eye(4, dtype=np.float32)
    candidate = (ids, unit)
    reference = (ids, unit[[0, 1, 3, 3]])  # token 11 of the reference points where </s> points
    p, r, f = pair_scores(candidate, reference)
    # candidate token 10 matches reference token 10 (1.0); candidate token 11 matches nothing (0.0)
    assert (p, r) == (0.5, 1.0) and f == pytest.approx(2 * 0.5 / 1.5)
    idf = idf_weights([ids, np.array([0, 10, 2])])
    assert idf[11] == pytest.approx(np.log(3 / 2)) and idf[10] == 0 and idf[0] == 0 and idf[99] == np.log(3)


def test_batch_size_and_order_do_not_change_scores(local_models):
    one = BertScore(batch_size=1, progress=False)(CANDIDATES[:12], REFERENCES[:12])
    many = BertScore(batch_size=64, progress=False)(CANDIDATES[:12][::-1], REFERENCES[:12][::-1])[::-1]
    np.testing.assert_allclose(one, many, rtol=0, atol=2e-6)


def test_out_of_memory_halves_the_batch(local_models, monkeypatch):
    encoder = BertScore(batch_size=16, progress=False).encoder
    forward, sizes = encoder._forward, []

    def flaky(batch):
        sizes.append(len(batch))
        if len(batch) > 4:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return forward(batch)

    monkeypatch.setattr(encoder, "_forward", flaky)
    states = encoder.encode(CANDIDATES[:10], progress=False)
    assert sizes[:3] == [10, 8, 4] and len(states) == 10  # 16 -> 8 -> 4, then 4 sticks
    clean = BertScore(progress=False).encoder.encode(CANDIDATES[:10], progress=False)
    for (ids_a, a), (ids_b, b) in zip(states, clean):
        assert ids_a.tolist() == ids_b.tolist() and np.allclose(a, b, atol=1e-5)


def test_the_reference_side_is_computed_once(local_models):
    scorer = BertScore(progress=False)
    encoded = []
    forward = scorer.encoder._forward
    scorer.encoder._forward = lambda batch: encoded.extend(batch) or forward(batch)
    first = scorer(CANDIDATES[:20], REFERENCES[:20])
    assert len(encoded) == len(set(CANDIDATES[:20] + REFERENCES[:20]))
    encoded.clear()
    second_system = [c.lower() for c in CANDIDATES[:20]]
    scorer(second_system, REFERENCES[:20])
    assert len(encoded) == len(set(second_system) - set(CANDIDATES[:20] + REFERENCES[:20]))  # no reference
    assert scorer.cache.hits >= len(set(REFERENCES[:20]))
    fresh = BertScore(progress=False)  # a new process: the SQLite cache still holds everything
    assert np.array_equal(fresh(CANDIDATES[:20], REFERENCES[:20]), first)
    assert fresh._encoder is None  # the model was never even loaded


def test_compute_and_signature_name_the_weights(local_models, tiny_roberta):
    out = compute("bertscore", ["Heart size is normal."], ["Heart size is normal."])
    assert out["bertscore"] == pytest.approx(1.0, abs=1e-5)
    assert re.fullmatch(r"bertscore:1\|model:local:[0-9a-f]{12}\|layer:5\|idf:no\|rescale:F:0.8473319\|"
                        r"rexrank:0\.1\.0", out["signature"])


def test_a_model_folder_without_tokenizer_is_named(local_models, tiny_roberta, tmp_path, monkeypatch):
    from rexrank.errors import MetricUnavailable

    broken = tmp_path / "roberta"
    shutil.copytree(tiny_roberta, broken)
    for name in ("tokenizer.json", "vocab.json"):
        (broken / name).unlink()
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(broken))
    with pytest.raises(MetricUnavailable, match=f"{broken} has no tokenizer"):
        BertScore(progress=False)(["a"], ["b"])
