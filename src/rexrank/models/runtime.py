"""Where and how models run: device choice, batches sorted by length, back-off on out-of-memory, progress."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import torch
from tqdm.auto import tqdm

T = TypeVar("T")


def pick_device(requested: str | None = None) -> torch.device:
    """`--device` if given, else CUDA when present, else the CPU."""
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _out_of_memory(err: BaseException) -> bool:
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
            if not _out_of_memory(err) or batch_size == 1:
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
