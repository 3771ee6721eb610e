"""How models run: precision (--dtype), the batch size fitted to free memory, and what a signature records of them."""

import os

import numpy as np
import pandas as pd
import pytest
import torch
from fixtures.reports import reports
from transformers import AutoConfig, AutoModel, AutoTokenizer

from rexrank.cli import main
from rexrank.models.runtime import CPU_BATCH, MAX_BATCH, MEMORY_SHARE, Runtime, activation_bytes, fit_batch
from rexrank.scorecard import MetricSet, score
from rexrank.scorers import SCORERS
from rexrank.scorers.bertscore import BertScore

TEXTS = reports(6, seed=3) + ["Heart size is normal."]
MODEL_SCORERS = [name for name, cls in SCORERS.items() if cls.cacheable]


def test_a_batch_fits_its_activations_in_half_the_free_memory():
    config = AutoConfig.for_model("bert", hidden_size=768, num_attention_heads=12, intermediate_size=3072)
    # bert-base at 512 tokens, one layer's tensors at 4 bytes: 12 heads x 512^2 scores and probabilities, two
    # 512 x 3072 feed-forward tensors, eight 512 x 768: 4 x (6,291,456 + 3,145,728 + 3,145,728) = 48 MiB
    assert activation_bytes(config, 512) == 48 * 2**20
    assert MEMORY_SHARE == 0.5
    assert fit_batch(2 * 2**30, 48 * 2**20) == 21  # 1 GiB of 2 free holds 21 texts of 48 MiB, not 22
    assert fit_batch(139 * 2**30, 48 * 2**20) == MAX_BATCH  # an H200 would take 1,482: capped
    assert fit_batch(10 * 2**20, 48 * 2**20) == 1  # never below one text: out-of-memory halving has the last word
    assert Runtime("cpu").batch_for(config) == CPU_BATCH and Runtime("cpu", 5).batch_for(config) == 5


def test_a_precision_or_batch_size_that_does_not_exist_is_refused(capsys):
    with pytest.raises(ValueError, match="int8"):
        Runtime(dtype="int8")
    with pytest.raises(ValueError, match="at least 1"):
        Runtime(batch_size=0)
    with pytest.raises(SystemExit) as exit_:
        main(["score", "predictions.csv", "--dataset", "x", "--dtype", "int8"])
    assert exit_.value.code == 2 and "invalid choice: 'int8'" in capsys.readouterr().err


@pytest.mark.slow
def test_bf16_is_the_encoder_under_autocast_and_never_mixes_with_fp32(local_models, tiny_roberta):
    fp32, bf16 = BertScore(batch_size=1, progress=False), BertScore(batch_size=1, dtype="bf16", progress=False)
    # the same forward pass, written out: bert-score's first five layers, each text alone, autocast to bfloat16
    net = AutoModel.from_pretrained(tiny_roberta, add_pooling_layer=False).eval()
    net.encoder.layer = net.encoder.layer[:5]
    tokenizer = AutoTokenizer.from_pretrained(tiny_roberta, add_prefix_space=True)
    for text, (ids, states) in zip(TEXTS, bf16.features(TEXTS), strict=True):
        expected_ids = tokenizer(text.strip())["input_ids"]
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            expected = net(input_ids=torch.tensor([expected_ids])).last_hidden_state
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_array_equal(states, expected[0].float().numpy())
    deviation = max(np.abs(a[1] - b[1]).max() for a, b in zip(fp32.features(TEXTS), bf16.features(TEXTS)))
    assert deviation > 0  # bf16 changes the numbers: which is why it is signed
    assert "dtype" not in fp32.signature().settings and bf16.signature().settings["dtype"] == "bf16"
    assert fp32.cache_namespace() != bf16.cache_namespace()  # a cached fp32 feature never serves a bf16 run


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_every_model_metric_runs_at_lower_precision_and_says_so(local_models, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "cache.sqlite"))
    rows = pd.DataFrame({"study_id": [f"s{i}" for i in range(len(TEXTS))], "prediction": TEXTS,
                         "reference": TEXTS[1:] + TEXTS[:1]})
    low = score(rows, MetricSet([*MODEL_SCORERS, "radcliq_v1"], progress=False, dtype=dtype), resamples=10)
    full = score(rows, MetricSet([*MODEL_SCORERS, "radcliq_v1"], progress=False), resamples=10)
    assert not low.skipped and set(MODEL_SCORERS) <= set(low.metrics)
    for name in [*MODEL_SCORERS, "radcliq_v1"]:
        low_key, full_key = low.metrics[name].signature.point_key, full.metrics[name].signature.point_key
        assert f"dtype:{dtype}" in low_key or f"dtype={dtype}" in low_key, name  # RadCliQ: in its components
        assert low_key.replace(f"|dtype:{dtype}", "").replace(f":dtype={dtype}", "") == full_key, name
        assert np.isfinite(low.per_study[name]).all(), name


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.parametrize("runtime", [True, False])
def test_once_models_run_a_large_block_gets_its_own_mapping_even_after_a_larger_one_was_freed(runtime):
    """glibc's default raises its mmap threshold to each mapped block freed, so that a batch's tensors come from the
    heap, where long-lived small blocks pin them and the peak grows with the studies; rexrank fixes the threshold
    (the control, without rexrank's runtime, shows the default)."""
    import subprocess
    import sys

    code = ("import ctypes, os\n"
            + ("import rexrank.models.runtime\n" if runtime else "")
            + "class Info(ctypes.Structure):\n"
            "    _fields_ = [(n, ctypes.c_size_t) for n in ('arena', 'ordblks', 'smblks', 'hblks', 'hblkhd', "
            "'usmblks', 'fsmblks', 'uordblks', 'fordblks', 'keepcost')]\n"
            "libc = ctypes.CDLL('libc.so.6'); libc.mallinfo2.restype = Info\n"
            "freed = bytearray(8 << 20); del freed\n"
            "before = libc.mallinfo2().hblkhd; kept = bytearray(2 << 20)\n"
            "print(libc.mallinfo2().hblkhd - before >= 2 << 20)")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(runtime)
