"""GRPO on report generation with rexrank's metrics as rewards: the leaderboard's own per-study numbers.

    pip install trl
    python examples/grpo_tiny.py [--model PATH] [--steps 2] [--out /tmp/grpo]

Without --model, a tiny random-weight Llama (the stand-in rexrank's tests build, tests/fixtures/tiny_models.py) is
trained for two steps on synthetic prompts: it shows the wiring, not learning. Each reward is `rexrank.rewards.reward`:
BLEU-2 here (no weights), or any metric of the registry (`reward("radgraph")`, `reward("radcliq_v1")`: RadCliQ is
rewarded negated, lower being better) once its weights resolve (`rexrank models download ...`, or the tests'
stand-ins through REXRANK_MODEL_* variables). The reference of each prompt is the dataset's `ground_truth` column.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rexrank.rewards import reward

# Synthetic prompts and references (no dataset's report text).
FINDINGS = ["Heart size is normal. No pleural effusion.", "Small left pleural effusion. No pneumothorax.",
            "Mild cardiomegaly without edema.", "Lungs are clear. No focal consolidation."]


def tiny_model(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from fixtures.tiny_models import build_tiny_llama

    return build_tiny_llama(folder / "tiny-llama")


def train(out: Path, model: str | Path | None = None, steps: int = 2, metrics: tuple[str, ...] = ("bleu2",)):
    """`steps` GRPO steps; the trainer's log history (each step's reward among it)."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    model = str(model or tiny_model(out))
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.pad_token = tokenizer.pad_token or tokenizer.eos_token
    tokenizer.padding_side = "left"
    data = Dataset.from_dict({"prompt": [f"Findings for study {i}:" for i in range(8)],
                              "ground_truth": [FINDINGS[i % len(FINDINGS)] for i in range(8)]})
    config = GRPOConfig(output_dir=str(out / "run"), max_steps=steps, per_device_train_batch_size=4,
                        num_generations=4, max_completion_length=16, logging_steps=1, report_to="none",
                        use_cpu=True, save_strategy="no", learning_rate=1e-4, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=[reward(m) for m in metrics], args=config, train_dataset=data,
                          processing_class=tokenizer)
    trainer.train()
    return trainer.state.log_history


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a causal LM folder or Hub id (default: a tiny random-weight Llama)")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--metrics", default="bleu2", help="comma-separated rexrank metric names")
    parser.add_argument("--out", type=Path, default=Path("/tmp/rexrank-grpo"))
    args = parser.parse_args()
    for row in train(args.out, args.model, args.steps, tuple(args.metrics.split(","))):
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
