"""How rexrank's runners (rexrank.inference.hf_runner) batch the studies they generate for.

A batch holds studies with the same number of images (their image tokens then take the same room), taken longest
prompt first, so that rows are padded little and the first batch is the largest: an out-of-memory shows at once,
halves the batch size and retries the same studies, down to one. Greedy decoding of a left-padded batch, with its
attention mask (from which `generate` makes each row's positions), gives every study the text it gets alone:
tests/inference/test_hf_runner.py compares every study's text at batch 1 and batched on both stand-ins.

The batch size is given (REXRANK_BATCH_SIZE), else CPU_BATCH on the CPU, else fitted to the GPU: batch 1 takes what
model.yaml's gpu_memory_gb says (at least what the loaded weights take), and each further study its KV cache for
its prompt and the new tokens, MARGIN times over for a decoding step's activations and the vision tower's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

CPU_BATCH = 8  # on the CPU a batch amortises generate's per-step overhead; memory is not what limits it
MAX_BATCH = 64
MEMORY_SHARE = 0.9  # of the GPU's memory: the rest for the allocator's fragmentation and CUDA's own context
MARGIN = 2


def ordered(keys: dict[str, tuple[int, int]]) -> list[str]:
    """Study ids by (image count, prompt length), largest first; ties keep their input order."""
    return sorted(keys, key=lambda sid: (-keys[sid][0], -keys[sid][1]))


def next_batch(pending: Sequence[str], counts: dict[str, int], size: int) -> list[str]:
    """The first `size` pending studies, cut where the image count changes."""
    batch = []
    for sid in pending[:size]:
        if counts[sid] != counts[pending[0]]:
            break
        batch.append(sid)
    return batch


def kv_cache_bytes(config, tokens: int, dtype_bytes: int) -> int:
    """The keys and values a decoder keeps for one sequence of `tokens` tokens, every layer (grouped-query
    attention's fewer key/value heads counted as such)."""
    text = config.decoder if getattr(config, "decoder", None) is not None else config.get_text_config()
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return 2 * text.num_hidden_layers * heads * head_dim * tokens * dtype_bytes


def fit_batch(total: int, used: int, claimed: int, per_study: int) -> int:
    """Studies per batch on a GPU of `total` bytes where the weights take `used` and batch 1 is `claimed` to need
    (model.yaml); each further study takes `per_study`."""
    headroom = MEMORY_SHARE * total - max(used, claimed)
    return max(1, min(MAX_BATCH, 1 + int(headroom // max(per_study, 1))))


def batch_size(given: int | None, device: str, per_study: Callable[[], int], claimed_gb: float | None) -> int:
    """`given`, else CPU_BATCH on the CPU, else fitted to the GPU (`per_study`: the largest study's bytes)."""
    if given:
        return given
    if not device.startswith("cuda"):
        return CPU_BATCH
    import torch

    total = torch.cuda.get_device_properties(device).total_memory
    return fit_batch(total, torch.cuda.memory_allocated(device), int((claimed_gb or 0) * 1e9), per_study())


def generate(run: Callable[[list[str]], list], order: Sequence[str], counts: dict[str, int], size: int,
             finished: Callable[[list[str], list, float], None], say: Callable[[str], None]) -> None:
    """`run` over batches of `order` (see next_batch); `finished(batch, results, seconds)` after each. On
    out-of-memory the batch size halves and the batch is retried."""
    import time

    import torch

    pending = list(order)
    while pending:
        batch = next_batch(pending, counts, size)
        started = time.monotonic()
        try:
            results = run(batch)
        except (RuntimeError, torch.OutOfMemoryError) as err:
            from rexrank.models.runtime import out_of_memory  # imports torch: not before a model runs

            if not out_of_memory(err) or len(batch) == 1:
                raise
            size = max(1, len(batch) // 2)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            say(f"out of memory at a batch of {len(batch)}: batches of {size} from now on")
            continue
        del pending[:len(batch)]
        finished(batch, results, time.monotonic() - started)
