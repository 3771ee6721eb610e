"""BERTScore: parity with the bert-score package on the same tiny random RoBERTa, and the reference's rules."""

import json
import re
import shutil
from collections import defaultdict

import numpy as np
import pytest
from fixtures.metric_contract import DIFFERS, FLOAT32, MetricContract, ScorerCase, empty_is
from fixtures.reports import reports

from rexrank.hf_metric import compute
from rexrank.scorers import SCORERS
from rexrank.scorers.bertscore import (
    BASELINE,
    BASELINES,
    LAYER,
    MODEL,
    PUBLISHED,
    BertScore,
    idf_weights,
    pair_scores,
    rescale,
)

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


def oracle(oracle_model, candidates, references, idf, rescale_with_baseline=True, folder=None, baseline=None):
    """CXR-Report-Metric: collapse runs of spaces, then bert-score (its layer, rescaled)."""
    folder, baseline = folder or oracle_model[0], baseline or oracle_model[1]
    squeeze = [re.sub(r" +", " ", t) for t in candidates], [re.sub(r" +", " ", t) for t in references]
    p, r, f = bert_score.score(*squeeze, model_type=folder, num_layers=LAYER, idf=idf, batch_size=64, lang="en",
                               rescale_with_baseline=rescale_with_baseline, baseline_path=baseline)
    return p.numpy(), r.numpy(), f.numpy()


@pytest.fixture(scope="module")
def stock_model(tiny_roberta, tmp_path_factory):
    """The same weights with the tokenizer as a RoBERTa repository ships it (add_prefix_space false): bert-score
    0.3.13 on transformers 5 then encodes without the leading space (its encode-time flag is ignored), as 0.3.11 does
    on transformers >= 4.17 (RobertaTokenizer no longer a GPT2Tokenizer; tests/test_reference_parity.py)."""
    folder = tmp_path_factory.mktemp("stock") / "roberta"
    shutil.copytree(tiny_roberta, folder)
    assert json.loads((folder / "tokenizer_config.json").read_text())["add_prefix_space"] is False
    return str(folder)


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


@pytest.mark.slow
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


@pytest.mark.slow
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
    assert re.fullmatch(rf"bertscore:1\|model:local:[0-9a-f]{{12}}\|layer:{LAYER}\|idf:no\|space:lead\|trunc:512\|"
                        rf"specials:w0\|rescale:F:{re.escape(str(BASELINE['F']))}\|rexrank:0\.1\.0", out["signature"])


def test_the_baselines_are_bert_scores_file_row_by_row_and_the_words_follow_the_layer():
    """Every layer's (P, R, F) of bert-score's distilroberta-base file, as the installed bert-score ships it, so
    another LAYER finds its baseline; the empty prediction's words and the summary are made from LAYER and it."""
    import csv
    from importlib.resources import files

    shipped = files("bert_score") / "rescale_baseline" / "en" / f"{MODEL}.tsv"
    rows = list(csv.DictReader(shipped.read_text().splitlines()))
    assert {(MODEL, int(row["LAYER"])): {k: float(row[k]) for k in "PRF"} for row in rows} == BASELINES
    assert BASELINE == BASELINES[(MODEL, LAYER)]
    empty = rescale(0.0, BASELINE["F"])
    assert f"= {empty:.4f}" in BertScore.empty_prediction and f"layer {LAYER}," in BertScore.summary


def test_a_model_folder_without_tokenizer_is_named(local_models, tiny_roberta, tmp_path, monkeypatch):
    from rexrank.errors import MetricUnavailable

    broken = tmp_path / "roberta"
    shutil.copytree(tiny_roberta, broken)
    for name in ("tokenizer.json", "vocab.json"):
        (broken / name).unlink()
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(broken))
    with pytest.raises(MetricUnavailable, match=f"{broken} has no tokenizer"):
        BertScore(progress=False)(["a"], ["b"])


# The stack's choices (docs/metrics.md §2): each option against bert-score on the same weights.

def test_without_the_leading_space_is_bert_score_on_a_stock_roberta_tokenizer(local_models, oracle_model,
                                                                                stock_model):
    from bert_score.utils import get_tokenizer, sent_encode

    ours = BertScore(prefix_space=False, progress=False)
    texts = [re.sub(r" +", " ", t) for t in CANDIDATES + REFERENCES + ["  padded  ", "x"]]  # "" crashes it here
    theirs = get_tokenizer(stock_model, use_fast=False)
    assert ours.encoder.token_ids(texts) == [sent_encode(theirs, t) for t in texts]
    first = ours.encoder.token_ids(["Heart"])[0][1]
    assert not ours.encoder.tokenizer.convert_ids_to_tokens(first).startswith("Ġ")  # no leading space
    lead = BertScore(progress=False).encoder.token_ids(texts)
    assert all(a[1] != b[1] for a, b in zip(ours.encoder.token_ids(texts), lead))  # each text's first token
    assert ours.encoder.token_ids([""]) == [[0, 2]]  # <s></s>, as bert-score encodes an empty text
    for idf in (False, True):
        _, _, expected = oracle(oracle_model, CANDIDATES, REFERENCES, idf, folder=stock_model)
        scores = BertScore(prefix_space=False, idf=idf, progress=False)(CANDIDATES, REFERENCES)
        np.testing.assert_allclose(scores, expected, rtol=1e-6, atol=1e-6)
        with_space = BertScore(idf=idf, progress=False)(CANDIDATES, REFERENCES)
        assert np.mean(np.abs(scores - with_space) > 1e-3) > 0.9  # the option is not a no-op: nearly every pair moves


def test_truncation_is_bert_scores_at_the_tokenizers_length(local_models, oracle_model, tmp_path):
    folder = tmp_path / "roberta"
    shutil.copytree(oracle_model[0], folder)
    settings = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps(settings | {"model_max_length": 64}))
    _, _, expected = oracle(oracle_model, CANDIDATES, REFERENCES, False, folder=str(folder))
    scorer = BertScore(max_tokens=64, progress=False)
    np.testing.assert_allclose(scorer(CANDIDATES, REFERENCES), expected, rtol=1e-6, atol=1e-6)
    lengths = [len(ids) for ids, _ in scorer.features(CANDIDATES + REFERENCES)]
    assert max(lengths) == 64 and sum(n == 64 for n in lengths) > 5
    assert not np.allclose(scorer(CANDIDATES, REFERENCES), BertScore(progress=False)(CANDIDATES, REFERENCES))


def test_another_baseline_and_none_are_bert_scores(local_models, oracle_model, tmp_path):
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n" + "".join(f"{layer},0.8,0.8,0.8521\n" for layer in range(7)))
    _, _, expected = oracle(oracle_model, CANDIDATES, REFERENCES, False, baseline=str(baseline))
    np.testing.assert_allclose(BertScore(baseline=0.8521, progress=False)(CANDIDATES, REFERENCES), expected,
                               rtol=1e-6, atol=1e-6)
    _, _, raw = oracle(oracle_model, CANDIDATES, REFERENCES, False, rescale_with_baseline=False)
    np.testing.assert_allclose(BertScore(baseline=None, progress=False)(CANDIDATES, REFERENCES), raw, rtol=0,
                               atol=1e-6)


@pytest.mark.slow
def test_a_baseline_shift_moves_each_pair_by_its_distance_from_1(local_models):
    """Why another baseline file cannot be the board's 0.02 on both sets: (F-b')/(1-b') - (F-b)/(1-b) =
    -(b'-b)(1-s)/(1-b'), with s the score at b; MoERad's 0.542 (IU-Xray) and 0.361 (MIMIC-CXR) would move in the
    ratio (1-0.542)/(1-0.361) = 0.72, where the board's gaps (0.017, 0.020, each +-0.0005) are in 0.80..0.89."""
    at_b = BertScore(progress=False)(CANDIDATES, REFERENCES)
    shifted = BertScore(baseline=BASELINE["F"] + 0.0048, progress=False)(CANDIDATES, REFERENCES)
    np.testing.assert_allclose(shifted - at_b, -0.0048 * (1 - at_b) / (1 - BASELINE["F"] - 0.0048), atol=2e-6)


def _bert_score_without_specials(folder, candidates, references, idf):
    """bert-score's own embeddings and greedy matching (`greedy_cos_idf`) over each text's tokens less <s> and
    </s>: what `specials="drop"` means, with bert-score's arithmetic."""
    import torch
    from bert_score.utils import get_bert_embedding, get_idf_dict, get_model, get_tokenizer, greedy_cos_idf

    tokenizer, model = get_tokenizer(folder, use_fast=False), get_model(folder, 5)
    references = [re.sub(r" +", " ", t) for t in references]
    candidates = [re.sub(r" +", " ", t) for t in candidates]
    weights = get_idf_dict(references, tokenizer, nthreads=1) if idf else defaultdict(lambda: 1.0)

    def inner(text):
        emb, mask, weight = get_bert_embedding([text], model, tokenizer, weights, device="cpu")
        n = int(mask.sum())
        assert n > 4  # greedy_cos_idf zeroes a text of 2 tokens: none here once <s></s> are cut
        return emb[:, 1:n - 1].clone(), mask[:, 1:n - 1].clone(), weight[:, 1:n - 1].clone().float()

    out = []
    for c, r in zip(candidates, references):
        _, _, f = greedy_cos_idf(*inner(r), *inner(c))
        out.append(float(f[0]))
    b = torch.tensor(BASELINE["F"])
    return ((torch.tensor(out) - b) / (1 - b)).numpy()


@pytest.mark.parametrize("idf", [False, True])
def test_dropped_special_tokens_are_bert_scores_matching_without_them(local_models, oracle_model, idf):
    texts = CANDIDATES[:30], REFERENCES[:30]
    expected = _bert_score_without_specials(oracle_model[0], *texts, idf)
    ours = BertScore(specials="drop", idf=idf, progress=False)
    np.testing.assert_allclose(ours(*texts), expected, rtol=1e-6, atol=2e-6)
    # Dropping match targets can only lower each token's best match: P, R and F never rise.
    kept = BertScore(idf=idf, progress=False)
    features = kept.features(CANDIDATES + REFERENCES)
    cands, refs = features[:len(CANDIDATES)], features[len(CANDIDATES):]
    idf_map = idf_weights([ids for ids, _ in refs]) if idf else None
    for c, r in zip(cands, refs):
        dropped, weight0 = pair_scores(c, r, idf_map, "drop"), pair_scores(c, r, idf_map)
        assert all(d <= w + 1e-12 for d, w in zip(dropped, weight0))
    assert ours(["", "Mild edema."], ["Mild edema.", ""]).tolist() == [pytest.approx(-5.5502, abs=5e-5)] * 2


def test_every_choice_is_signed_and_the_published_ones_depart_from_nothing(local_models):
    from rexrank.official import departures as official_departures
    from rexrank.scorers.bertscore import stack_departures as departures
    from rexrank.signature import Signature

    default = BertScore(progress=False).signature()
    assert {k: default.settings[k] for k in PUBLISHED} == PUBLISHED
    assert departures(default.settings) == []
    options = {"prefix_space": False, "idf": True, "specials": "drop", "max_tokens": 256, "baseline": 0.85}
    signed = {"prefix_space": ("space", "none"), "idf": ("idf", "refs"), "specials": ("specials", "drop"),
              "max_tokens": ("trunc", "256"), "baseline": ("rescale", "F:0.85")}
    for option, value in options.items():
        made = BertScore(progress=False, **{option: value}).signature()
        key, shown = signed[option]
        assert made.settings[key] == shown and made.point_key != default.point_key
        said = departures(made.settings)
        assert len(said) == 1, option
        # the board's mark (rexrank.official) says it, beside whatever else it says of a local model's number
        assert set(official_departures(made)) - set(official_departures(default)) == set(said)
    assert BertScore(baseline=None, progress=False).signature().settings["rescale"] == "no"
    assert departures(BertScore(prefix_space=False, progress=False).signature().settings) == [
        "bertscore tokenised without RoBERTa's leading space, CXR-Report-Metric's pinned stack with it"]
    assert departures(BertScore(baseline=None, progress=False).signature().settings) == [
        "bertscore not rescaled, the published rescaled with F:0.8473319"]
    assert departures({"trunc": "256"}) == ["bertscore truncated at 256 tokens, bert-score at 512"]
    # a number signed before these were options (no space, trunc, specials) was made the published way
    assert departures({"layer": "5", "idf": "no"}) == []
    # inside a composite, the component's departure is named
    composite = Signature("radcliq_v1", "1", components=(BertScore(prefix_space=False, progress=False).signature(),))
    assert departures(composite.components[0].settings)[0] in official_departures(composite)


@pytest.mark.slow
def test_tokenisation_options_key_the_feature_cache_and_scoring_options_do_not(local_models):
    default = BertScore(progress=False).cache_namespace()
    assert "|space:" not in default and "|trunc:" not in default  # the namespace it had before the options: caches hold
    for option in ({"prefix_space": False}, {"max_tokens": 128}):
        assert BertScore(progress=False, **option).cache_namespace() != default
    for option in ({"idf": True}, {"specials": "drop"}, {"baseline": None}):
        assert BertScore(progress=False, **option).cache_namespace() == default
    texts = ["Heart size is normal.", "Mild edema."]
    BertScore(progress=False)(texts, texts[::-1])  # the cache now holds these texts with the leading space
    fresh = BertScore(prefix_space=False, progress=False)
    fresh_scores = fresh(texts, texts[::-1])
    assert fresh._encoder is not None  # computed, not served the other tokenisation's features
    assert fresh.features(texts)[0][0].tolist() == fresh.encoder.token_ids(texts[:1])[0]
    again = BertScore(prefix_space=False, progress=False)
    assert np.array_equal(again(texts, texts[::-1]), fresh_scores) and again._encoder is None  # its own, cached


@pytest.mark.parametrize("option", [{"specials": "none"}, {"max_tokens": 2}, {"max_tokens": 513},
                                    {"max_tokens": 128.0}, {"baseline": 1.0}, {"baseline": float("nan")},
                                    {"baseline": "0.84"}, {"prefix_space": "no"}])
def test_a_bad_option_is_named(local_models, option):
    with pytest.raises(ValueError, match=next(iter(option))):
        BertScore(progress=False, **option)


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---

BERTSCORE = ScorerCase(
    name="bertscore", cls=SCORERS["bertscore"], tolerance=2e-6,
    why=f"{FLOAT32}; cosines summed in float64 from them; the rescale divides by 1 - b (x6.5)",
    nfd=DIFFERS, nfd_why="RoBERTa's byte-level BPE has no normalizer: NFD is other bytes, other tokens",
    empty_rule=empty_is(rescale(0.0, BASELINE["F"])), variant={"idf": True},
    oracle=lambda ctx, predictions, references: oracle(ctx.request.getfixturevalue("oracle_model"), predictions,
                                                       references, idf=False)[2],
    oracle_tolerance=2e-6, oracle_why="bert-score on the same tiny weights: float32 cosines, rescaled (x6.5)")


class TestBertScoreContract(MetricContract):
    case = BERTSCORE
