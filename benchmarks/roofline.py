"""The CPU's roofline for the model metrics: what a bare BERT-base forward pass reaches, in GFLOP/s, beside a large
fp32 matrix product on the same threads and the cores' nominal FMA peak.

    python benchmarks/roofline.py [--batch 32] [--tokens 128] [--runs 5]

FLOPs are counted, not sampled: per layer and token, the four attention projections (4 x 2 h^2), the feed-forward
(2 x 2 h i), and per sequence the scores and the weighted sum (2 x 2 t^2 h); softmax, norms and GELU are left out
(they are memory-bound and a few percent). The nominal peak is cores x clock (from /proc/cpuinfo) x 32 fp32 FLOP
per cycle (two 256-bit FMA pipes: Zen 4's, and AVX-512 on it is double-pumped). Every model metric's encoder is
this forward pass (distilroberta has 6 layers, the others 12), so each metric's "bare encoder forward" row in
benchmarks/README.md runs at this rate.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def clock_ghz() -> float:
    with open("/proc/cpuinfo") as info:
        return next(float(line.split(":")[1]) for line in info if line.startswith("cpu MHz")) / 1000


def seconds(fn, runs: int) -> float:
    fn()  # warm-up: the allocator and the kernels' first dispatch
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from transformers import BertConfig, BertModel

    h, i, layers, b, t = 768, 3072, 12, args.batch, args.tokens
    net = BertModel(BertConfig(hidden_size=h, intermediate_size=i, num_hidden_layers=layers, num_attention_heads=12,
                               vocab_size=30522), add_pooling_layer=False).eval()
    ids = torch.randint(1000, 30000, (b, t))
    with torch.inference_mode():
        forward = seconds(lambda: net(input_ids=ids), args.runs)
    flops = layers * (b * t * (8 * h * h + 4 * h * i) + b * 4 * t * t * h)
    n = 2048
    x, y = torch.randn(n, n), torch.randn(n, n)
    gemm = seconds(lambda: x @ y, args.runs)
    threads, ghz = torch.get_num_threads(), clock_ghz()
    peak = threads * ghz * 32
    print(f"torch {torch.__version__}, {threads} threads, {ghz:.2f} GHz nominal: FMA peak {peak:.0f} GFLOP/s")
    for name, rate in ((f"fp32 matrix product {n}x{n}x{n}", 2 * n ** 3 / gemm / 1e9),
                       (f"BERT-base forward, {b} x {t} tokens", flops / forward / 1e9)):
        print(f"{name:<40} {rate:7.1f} GFLOP/s  {rate / peak:6.1%} of peak")


if __name__ == "__main__":
    main()
