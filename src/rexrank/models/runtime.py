"""Where and how models run: device, precision, batch size (from free memory on CUDA), batches sorted by length,
back-off on out-of-memory, progress."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

import torch
from tqdm.auto import tqdm

from rexrank.models import PRECISIONS

T = TypeVar("T")

M_MMAP_THRESHOLD = -3  # glibc's mallopt() parameter
MMAP_THRESHOLD = 1 << 20  # bytes: a block this large or larger gets a mapping of its own


def map_large_blocks() -> bool:
    """Fix glibc's mmap threshold at MMAP_THRESHOLD; True when set. glibc serves a block above the threshold from a
    mapping of its own, returned whole when freed, but by default it raises the threshold to the size of each such
    block freed (up to 32 MiB). A batch's tensors then come from the heap, among small blocks that live on (oneDNN
    keeps a compiled primitive per tensor shape it meets, up to 1,024), and the heap cannot give back what those pin:
    the peak grew with the number of studies scored (benchmarks/README.md, "Scale"; `benchmarks/heap.py` shows it).
    Fixed, large tensors stay in their own mappings, at no cost in time (1,000 studies at 1, 8 and 32 MiB: 390, 367
    and 398 ms each). Not on other C libraries, nor when the user set MALLOC_MMAP_THRESHOLD_ (theirs stands)."""
    if not sys.platform.startswith("linux") or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    try:
        return bool(ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    except (OSError, AttributeError):  # musl and others: no glibc to tune
        return False


map_large_blocks()  # before any model runs: every scorer's models run through this module


def pick_device(requested: str | None = None) -> torch.device:
    """`--device` if given, else CUDA when present, else the CPU."""
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


# --dtype: fp32, what the reference implementations ran, is the default; bf16 and fp16 run the matrix products under
# torch.autocast (the weights stay fp32; CUDA's autocast keeps softmax and layer norm in fp32) and are recorded in
# the signature, so such a number is never ranked beside an fp32 one.
DTYPES = dict(zip(PRECISIONS, (torch.float32, torch.bfloat16, torch.float16), strict=True))
CPU_BATCH = 32  # texts per forward pass on the CPU, where memory is not what limits it
MAX_BATCH = 256  # beyond this a GPU gains nothing on 512-token encoders: the products are already large
MEMORY_SHARE = 0.5  # of the free GPU memory, for one batch's activations (the rest: fragmentation, the heads)


def activation_bytes(config: Any, tokens: int) -> int:
    """The peak activation memory of one text of `tokens` tokens in a forward pass of a BERT-like encoder under
    inference mode, where one layer's tensors live at a time: the attention scores and probabilities (heads x
    tokens^2, twice), the feed-forward's intermediate (twice: before and after the activation), and about eight
    hidden-width tensors (q, k, v, context, residuals, norms). Counted at 4 bytes a number: fp32's, an upper bound
    under autocast."""
    hidden, heads = config.hidden_size, config.num_attention_heads
    intermediate = getattr(config, "intermediate_size", 4 * hidden)
    return 4 * (2 * heads * tokens * tokens + 2 * tokens * intermediate + 8 * tokens * hidden)


def fit_batch(free_bytes: int, per_text: int) -> int:
    """Texts per batch such that one batch's activations take at most MEMORY_SHARE of `free_bytes`."""
    return max(1, min(MAX_BATCH, int(MEMORY_SHARE * free_bytes) // max(per_text, 1)))


@dataclass(frozen=True)
class Runtime:
    """How a model runs: `device` (None: CUDA when present, else the CPU), `batch_size` (None: chosen from the free
    GPU memory on CUDA, CPU_BATCH on the CPU) and `dtype` (fp32, bf16 or fp16)."""

    device: str | None = None
    batch_size: int | None = None
    dtype: str = "fp32"

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r}: choose one of {', '.join(DTYPES)}")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch size {self.batch_size}: give a whole number of at least 1")

    @cached_property
    def torch_device(self) -> torch.device:
        return pick_device(self.device)

    @property
    def settings(self) -> dict[str, str]:
        """What a signature records of the runtime: only a precision other than fp32 changes the numbers (a device or
        a batch size changes them at float rounding, as a CPU's BLAS does)."""
        return {} if self.dtype == "fp32" else {"dtype": self.dtype}

    def precision(self):
        """The context a forward pass runs in: nothing for fp32, else autocast to the chosen dtype."""
        if self.dtype == "fp32":
            return contextlib.nullcontext()
        return torch.autocast(self.torch_device.type, dtype=DTYPES[self.dtype])

    def batch_for(self, config: Any, tokens: int = 512) -> int:
        """The batch size for an encoder of `config` on texts of up to `tokens` tokens (the first batch is the
        longest: batches go longest first)."""
        if self.batch_size is not None:
            return self.batch_size
        if self.torch_device.type != "cuda":
            return CPU_BATCH
        free, _ = torch.cuda.mem_get_info(self.torch_device)
        return fit_batch(free, activation_bytes(config, tokens))


def out_of_memory(err: BaseException) -> bool:
    return isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err).lower()


def run_batches(items: Sequence[T], lengths: Sequence[int], batch_size: int, run: Callable[[list[T]], list],
                desc: str, progress: bool = True) -> list:
    """`run` over batches of `items` taken longest first (little padding); outputs in the original order.

    On out-of-memory the batch size halves and the batch is retried, down to 1.
    """
    order = sorted(range(len(items)), key=lambda i: -lengths[i])
    out: list = [None] * len(items)
    bar = tqdm(total=len(items), desc=desc, unit="text", disable=None if progress else True, leave=False)
    start = 0
    while start < len(order):
        chunk = order[start:start + batch_size]
        try:
            results = run([items[i] for i in chunk])
        except (RuntimeError, torch.OutOfMemoryError) as err:
            if not out_of_memory(err) or batch_size == 1:
                raise
            batch_size = max(1, batch_size // 2)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
            bar.set_postfix(batch_size=batch_size)
            continue
        for i, result in zip(chunk, results, strict=True):
            out[i] = result
        start += len(chunk)
        bar.update(len(chunk))
    bar.close()
    return out
