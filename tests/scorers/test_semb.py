"""CheXbert and SembScore: the embedding and labels as the reference code reads them, and the label F1 math."""

import re

import numpy as np
import pytest
import torch
from fixtures.metric_contract import FLOAT32, SAME, MetricContract, ScorerCase
from fixtures.reports import reports

from rexrank.errors import MetricUnavailable
from rexrank.hf_metric import compute
from rexrank.models.conditions import NEGATIVE, POSITIVE, UNCERTAIN
from rexrank.scorers import SCORERS
from rexrank.scorers.semb import SembScore, label_f1

TEXTS = reports(30, seed=5, long_every=11) + ["", "  Heart size is normal.\n\nNo   effusion.  ", "NO EFFUSION."]


def reference_reading(texts, bert_base, checkpoint):
    """CXR-Report-Metric's encode path, one report at a time: clean as `get_impressions_from_csv`, tokenize as
    `bert_tokenizer.tokenize`, load as `encode.py` on CPU (k[7:]), take `bert_encoder` [CLS] (logits=False)
    and the labeler heads' argmax."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    tokenizer = AutoTokenizer.from_pretrained(bert_base)
    state = torch.load(checkpoint, map_location="cpu")["model_state_dict"]
    state = {k[7:]: v for k, v in state.items()}
    bert = BertModel(BertConfig.from_pretrained(bert_base))
    bert.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("bert.")}, strict=False)
    heads = [(state[f"linear_heads.{i}.weight"], state[f"linear_heads.{i}.bias"]) for i in range(14)]
    out = []
    for text in texts:
        text = re.sub(r"\s+", " ", text.strip().replace("\n", " ")).strip()
        pieces = tokenizer.tokenize(text)
        if pieces:
            ids = [tokenizer.cls_token_id] + tokenizer.convert_tokens_to_ids(pieces) + [tokenizer.sep_token_id]
            ids = ids[:511] + [tokenizer.sep_token_id] if len(ids) > 512 else ids
        else:
            ids = [tokenizer.cls_token_id, tokenizer.sep_token_id]
        with torch.no_grad():
            cls = bert.eval()(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids))).last_hidden_state[0, 0]
        labels = [int((cls @ w.T + b).argmax()) for w, b in heads]
        out.append((cls.numpy(), np.array(labels)))
    return out


@pytest.mark.slow
def test_embedding_and_labels_match_the_reference_reading(local_models, tiny_bert_base, tiny_chexbert):
    ours = SembScore(batch_size=8, progress=False).features(TEXTS)
    theirs = reference_reading(TEXTS, tiny_bert_base, tiny_chexbert)
    for text, (emb, labels), (ref_emb, ref_labels) in zip(TEXTS, ours, theirs):
        np.testing.assert_allclose(emb, ref_emb, rtol=0, atol=2e-5, err_msg=text[:60])
        assert labels.tolist() == ref_labels.tolist(), text[:60]
    classes = np.array([labels for _, labels in ours])
    assert {POSITIVE, NEGATIVE, UNCERTAIN} <= set(classes[:, :13].ravel().tolist())  # a fixture that discriminates
    assert len(SembScore(progress=False).model.token_ids([TEXTS[10]])[0]) == 512


@pytest.mark.slow
def test_sembscore_is_the_cosine_of_embeddings(local_models):
    scorer = SembScore(progress=False)
    candidates, references = TEXTS[:15], TEXTS[15:30]
    features = scorer.features(candidates + references)
    expected = []
    for (c, _), (r, _) in zip(features[:15], features[15:]):  # add_semb_col's float32 numpy formula
        expected.append((r * c).sum() / (np.linalg.norm(r) * np.linalg.norm(c)))
    scores = scorer(candidates, references)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)
    assert scores.std() > 1e-3  # texts move the embedding
    assert scorer(["Heart size is normal."], ["Heart  size is normal.\n"])[0] == pytest.approx(1.0, abs=1e-6)


def test_label_f1_on_hand_made_labels():
    blank = [0] * 14
    ref = [blank.copy() for _ in range(3)]
    hyp = [blank.copy() for _ in range(3)]
    ref[0][1], hyp[0][1] = POSITIVE, UNCERTAIN  # Cardiomegaly: uncertain counts as positive -> TP
    ref[1][4], hyp[1][4] = POSITIVE, NEGATIVE  # Edema: FN
    hyp[2][2] = POSITIVE  # Lung Opacity (not in the top 5): FP
    ref[2][9], hyp[2][9] = NEGATIVE, NEGATIVE  # Pleural Effusion: negative is 0 on both sides
    f1 = label_f1(np.array(hyp), np.array(ref))
    # 14: TP 1, FP 1, FN 1 -> micro 2/4; per condition F1 is 1 (Cardiomegaly), 0 (Edema, Lung Opacity), 0 else
    assert f1["micro_f1_14"] == 0.5 and f1["macro_f1_14"] == pytest.approx(1 / 14)
    # top 5: TP 1, FN 1 -> micro 2/3; macro (1 + 0 + 0 + 0 + 0) / 5
    assert f1["micro_f1_5"] == pytest.approx(2 / 3) and f1["macro_f1_5"] == pytest.approx(0.2)


def test_compute_and_signature(local_models):
    out = compute("semb_score", ["Mild cardiomegaly."], ["Mild cardiomegaly."])
    assert out["semb_score"] == pytest.approx(1.0, abs=1e-6)
    assert re.fullmatch(r"semb_score:1\|chexbert:local:[0-9a-f]{12}\|tokenizer:local:[0-9a-f]{12}\|rexrank:.*",
                        out["signature"])


def test_bad_checkpoints_are_named(local_models, tiny_chexbert, tmp_path, monkeypatch):
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(tiny_chexbert.read_bytes()[:5000])
    monkeypatch.setenv("REXRANK_MODEL_CHEXBERT", str(truncated))
    with pytest.raises(MetricUnavailable, match=f"CheXbert checkpoint {truncated} cannot be read"):
        SembScore(progress=False)(["a"], ["b"])

    data = torch.load(tiny_chexbert)
    del data["model_state_dict"]["module.linear_heads.13.weight"]
    data["model_state_dict"]["module.extra.weight"] = torch.zeros(1)
    partial = tmp_path / "partial.pth"
    torch.save(data, partial)
    monkeypatch.setenv("REXRANK_MODEL_CHEXBERT", str(partial))
    with pytest.raises(MetricUnavailable, match=r"missing \['linear_heads.13.weight'\], unexpected \['extra.weight'\]"):
        SembScore(progress=False)(["a"], ["b"])


def test_a_base_folder_without_tokenizer_is_named(local_models, tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setenv("REXRANK_MODEL_BERT_BASE_UNCASED", str(tmp_path))
    with pytest.raises(MetricUnavailable, match=f"{tmp_path} has no tokenizer"):
        SembScore(progress=False)(["a"], ["b"])


# --- the contract every metric keeps (tests/fixtures/metric_contract.py) ---


def semb_empty(case, ctx, references):
    """"cosine with the embedding of [CLS][SEP] (a fixed vector), not 0": what a blank report gets, whatever its
    whitespace; not 0 against these references."""
    blank = case.scores(ctx, [" \n\t "] * len(references), references)
    assert np.all(blank != 0)
    return blank


SEMB = ScorerCase(
    name="semb_score", cls=SCORERS["semb_score"], tolerance=1e-6, why=f"{FLOAT32}; the cosine in float64",
    nfd=SAME, nfd_why="bert-base-uncased's normalizer lower-cases and strips accents (NFD, marks dropped) first",
    empty_rule=semb_empty, variant={"dtype": "bf16"},
    skips={"oracle": "f1chexbert 0.0.2 runs in a Python of its own (transformers 4), on the same tiny weights: "
                     "tests/test_reference_parity.py::test_labels_equal_f1chexbert_0_0_2; here "
                     "test_embedding_and_labels_match_the_reference_reading"})


class TestSembScoreContract(MetricContract):
    case = SEMB
