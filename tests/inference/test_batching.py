"""How rexrank's runner batches studies: the order, where a batch is cut, the batch size a GPU's memory allows, and
the back-off on out-of-memory (the texts themselves: test_hf_runner compares batched and batch-1 generation)."""

from __future__ import annotations

import pytest
import torch

from rexrank.inference import batching


def test_studies_go_by_image_count_then_prompt_length_largest_first():
    keys = {"a": (1, 50), "b": (2, 10), "c": (1, 70), "d": (2, 10), "e": (3, 5)}
    order = batching.ordered(keys)
    assert order == ["e", "b", "d", "c", "a"]  # ties keep their input order
    counts = {sid: keys[sid][0] for sid in keys}
    assert batching.next_batch(order, counts, 8) == ["e"]  # cut where the image count changes
    assert batching.next_batch(order[1:], counts, 8) == ["b", "d"]
    assert batching.next_batch(order[3:], counts, 1) == ["c"]


def test_the_batch_size_fits_the_gpu_after_what_batch_one_takes():
    gb = 10**9
    # 80 GB, 0.9 of it usable = 72; batch 1 claimed at 16 GB (the weights took 9): 56 GB left at 2 GB a study
    assert batching.fit_batch(80 * gb, 9 * gb, 16 * gb, 2 * gb) == 1 + 28
    assert batching.fit_batch(80 * gb, 20 * gb, 16 * gb, 2 * gb) == 1 + 26  # the weights took more than claimed
    assert batching.fit_batch(16 * gb, 9 * gb, 16 * gb, 2 * gb) == 1  # nothing left: one at a time
    assert batching.fit_batch(141 * gb, 1 * gb, 0, 10**6) == batching.MAX_BATCH
    assert batching.batch_size(5, "cuda:0", lambda: 1 / 0, 16) == 5  # given: nothing measured
    assert batching.batch_size(None, "cpu", lambda: 1 / 0, 16) == batching.CPU_BATCH


def test_a_study_s_kv_cache_counts_grouped_query_heads():
    from transformers import Gemma3Config, Gemma3TextConfig, SiglipVisionConfig

    config = Gemma3Config(text_config=Gemma3TextConfig(hidden_size=2560, num_hidden_layers=34, num_attention_heads=8,
                                                       num_key_value_heads=4, head_dim=256),
                          vision_config=SiglipVisionConfig())
    # MedGemma 4B's shape: 34 layers x (keys, values) x 4 heads x 256 x 1,000 tokens x 2 bytes (bf16)
    assert batching.kv_cache_bytes(config, 1000, 2) == 34 * 2 * 4 * 256 * 1000 * 2


def test_out_of_memory_halves_the_batch_and_retries_the_same_studies():
    order = [f"s{i}" for i in range(7)]
    counts = dict.fromkeys(order, 1)
    seen, done, said = [], [], []

    def run(batch):
        seen.append(list(batch))
        if len(batch) > 3:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return [f"text of {sid}" for sid in batch]

    batching.generate(run, order, counts, 8, lambda batch, results, s: done.append((batch, results)), said.append)
    assert [len(b) for b in seen] == [7, 3, 3, 1]
    assert [sid for batch, _ in done for sid in batch] == order  # each study once, in order
    assert all(r == [f"text of {sid}" for sid in b] for b, r in done)
    assert said == ["out of memory at a batch of 7: batches of 3 from now on"]


def test_other_errors_and_out_of_memory_at_one_study_are_raised():
    def broken(batch):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        batching.generate(broken, ["a", "b"], {"a": 1, "b": 1}, 2, lambda *a: None, lambda m: None)

    def too_big(batch):
        raise torch.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(torch.OutOfMemoryError):
        batching.generate(too_big, ["a", "b"], {"a": 1, "b": 1}, 2, lambda *a: None, lambda m: None)
