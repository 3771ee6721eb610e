"""Milliseconds per sample of each metric as a GRPO reward (`rexrank.rewards.reward`), on the CPU, with the tiny
random-weight stand-ins the tests build (tests/fixtures/tiny_models.py; `--real-size`: the 768-wide shapes
benchmarks/models.py uses), on synthetic report pairs.

    .venv/bin/python benchmarks/rewards.py [--samples 64] [--steps 3] [--real-size]

Each metric's reward is called `--steps` times with `--samples` new completions against the same references, as GRPO
calls it: the first call computes the references' features (cold), the later ones reuse them (warm, the steady state
of training). RadEval 2.2's reward functions (`radeval.rewards.make_reward_fn`) are not run beside them here: RadEval
loads its models by Hub id (no Hub here, and no way to hand it these stand-ins' folders) and its install pulls
torchvision, medspacy and stanza, which rexrank keeps out of its environment; its column is printed as such.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

from synthetic import pairs  # noqa: E402

RADEVAL = "not run: loads its models by Hub id, no Hub here"


def stand_ins(work: Path, real_size: bool) -> None:
    """Every model's stand-in, pointed at by the variables rexrank's weight resolution reads."""
    from fixtures.tiny_models import (
        build_bert_base,
        build_biolord,
        build_chexbert_checkpoint,
        build_radgraph,
        build_rate_ner,
        build_roberta,
    )

    wide = {"hidden": 768, "heads": 12} if real_size else {}
    bert = build_bert_base(work / "bert-base-uncased", **wide)
    os.environ |= {"REXRANK_MODEL_BERTSCORE": str(build_roberta(work / "distilroberta", **wide)),
                   "REXRANK_MODEL_BERT_BASE_UNCASED": str(bert),
                   "REXRANK_MODEL_CHEXBERT": str(build_chexbert_checkpoint(work / "chexbert" / "chexbert.pth", bert)),
                   "REXRANK_MODEL_RADGRAPH": str(build_radgraph(work / "radgraph" / "radgraph", bert)),
                   "REXRANK_MODEL_RATE_NER": str(build_rate_ner(work / "rate-ner", **wide)),
                   "REXRANK_MODEL_BIOLORD": str(build_biolord(work / "biolord", **wide)),
                   "REXRANK_CACHE": str(work / "features.sqlite"), "HF_HUB_OFFLINE": "1"}


def timed(name: str, samples: int, steps: int) -> tuple[float, float]:
    """(cold, warm) milliseconds per sample: the first call, and the mean of the others."""
    from rexrank.rewards import reward

    rewarding = reward(name)
    _, references = pairs(samples, seed=0)
    spent = []
    for step in range(steps):
        completions, _ = pairs(samples, seed=step + 1)  # new completions each step, the same references
        start = time.perf_counter()
        rewarding(completions, ground_truth=references)
        spent.append((time.perf_counter() - start) * 1000 / samples)
    return spent[0], sum(spent[1:]) / max(1, len(spent) - 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--real-size", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    with tempfile.TemporaryDirectory(prefix="rexrank-rewards-") as work:
        stand_ins(Path(work), args.real_size)
        from rexrank.scorers import REGISTRY

        print(f"{args.samples} samples a step, {args.steps} steps, torch threads {torch.get_num_threads()}, "
              f"{'768-wide' if args.real_size else 'tiny'} random-weight stand-ins")
        print("| metric | rexrank cold ms/sample | rexrank warm ms/sample | RadEval ms/sample |")
        print("|---|---:|---:|---|")
        for name, made in REGISTRY.items():
            if made.kind not in ("scorer", "composite", "aggregated"):  # a judge's cost is its server's
                continue
            cold, warm = timed(name, args.samples, args.steps)
            print(f"| {name} | {cold:.2f} | {warm:.2f} | {RADEVAL} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
