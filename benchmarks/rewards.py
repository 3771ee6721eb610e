"""Milliseconds per sample of each metric as a GRPO reward (`rexrank.rewards.reward`), on the CPU, with the tiny
random-weight stand-ins the tests build (tests/fixtures/tiny_models.py; `--real-size`: the 768-wide shapes
benchmarks/models.py uses), on synthetic report pairs.

    .venv/bin/python benchmarks/rewards.py [--samples 64] [--steps 3] [--real-size] [--radeval PYTHON]

Each metric's reward is called `--steps` times with `--samples` new completions against the same references, as GRPO
calls it: the first call computes the references' features (cold), the later ones reuse them (warm, the steady state
of training). With `--radeval PYTHON` (a Python with RadEval 2.2 installed: its install pulls torchvision, medspacy
and stanza, which rexrank keeps out of its environment), RadEval's reward functions (`radeval.rewards.make_reward_fn`)
are timed the same way beside them (benchmarks/radeval_rewards.py), on the same pairs and the same stand-ins, which
it finds in a Hugging Face cache under the Hub ids it loads, offline. RadEval's numbers of the same name are other
numbers (its `bleu` is BLEU-4 per sample, its BERTScore distilbert-base-uncased's); the column compares cost only.
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

RADEVAL = "not run: no --radeval PYTHON given"
# rexrank's metric -> RadEval's metric and per-sample key, where RadEval has one of the same name or kind
RADEVAL_METRICS = {"bleu2": ("bleu", None), "bleu4": ("bleu", None), "rouge_l": ("rouge", "rougeL"),
                   "bertscore": ("bertscore", None), "radgraph": ("radgraph", "radgraph_partial"),
                   "ratescore": ("ratescore", None), "radcliq_v1": ("radcliq", None),
                   "chexbert_micro_f1_14": ("f1chexbert", "f1chexbert_sample_acc_all"),
                   "chexbert_micro_f1_5": ("f1chexbert", "f1chexbert_sample_acc_5")}
# the Hub ids RadEval loads -> the stand-in folder (or files) under `stand_ins`' work folder
RADEVAL_HUB = {"bert-base-uncased": "bert-base-uncased", "distilroberta-base": "distilroberta",
               "distilbert-base-uncased": "distilbert", "Angelakeke/RaTE-NER-Deberta": "rate-ner",
               "FremyCompany/BioLORD-2023-C": "biolord"}


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


def distilbert(work: Path) -> None:
    """A tiny random DistilBERT with the tiny BERT's vocabulary (RadEval's BERTScore reads its layer 5)."""
    import shutil

    from transformers import AutoConfig, DistilBertConfig, DistilBertModel

    bert = AutoConfig.from_pretrained(work / "bert-base-uncased")
    config = DistilBertConfig(vocab_size=bert.vocab_size, dim=bert.hidden_size, n_heads=bert.num_attention_heads,
                              hidden_dim=bert.intermediate_size, n_layers=6)
    DistilBertModel(config).save_pretrained(work / "distilbert")
    for name in ("vocab.txt", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.json"):
        if (work / "bert-base-uncased" / name).exists():
            shutil.copy(work / "bert-base-uncased" / name, work / "distilbert" / name)


def hub_cache(work: Path) -> Path:
    """An HF_HOME holding the stand-ins under the Hub ids RadEval loads, laid out as the parity tests lay them out
    (`hf_cache_entry`), and RadEval's CheXbert's own cache (under XDG_CACHE_HOME) holding its checkpoint alike."""
    import shutil
    import tarfile

    from fixtures.reference_venv import hf_cache_entry

    home, scorers = work / "hf", work / "rrg-scorers"
    distilbert(work)
    for repo_id, folder in RADEVAL_HUB.items():
        hf_cache_entry(home, repo_id, work / folder)
    scorers.mkdir()
    shutil.copy(work / "chexbert" / "chexbert.pth", scorers / "chexbert.pth")
    with tarfile.open(scorers / "radgraph.tar.gz", "w:gz") as tar:
        for item in (work / "radgraph" / "radgraph").iterdir():
            tar.add(item, arcname=item.name)
    hf_cache_entry(home, "StanfordAIMI/RRG_scorers", scorers)
    entry = "models--StanfordAIMI--RRG_scorers"
    shutil.copytree(home / "hub" / entry, work / "xdg" / "chexbert" / entry)
    return home


def radeval_timed(python: str, work: Path, samples: int, steps: int) -> dict[str, str]:
    """RadEval's reward functions on the same pairs, each "cold / warm" ms/sample or why it did not run."""
    import json
    import subprocess

    _, references = pairs(samples, seed=0)
    job = {"metrics": RADEVAL_METRICS, "references": references,
           "completions": [pairs(samples, seed=step + 1)[0] for step in range(steps)]}
    env = {**os.environ, "HF_HOME": str(hub_cache(work)), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "XDG_CACHE_HOME": str(work / "xdg")}
    ran = subprocess.run([python, str(ROOT / "benchmarks" / "radeval_rewards.py")], input=json.dumps(job),
                         capture_output=True, text=True, env=env, timeout=3600)
    out = {}
    for line in ran.stdout.splitlines():
        if line.startswith("{"):
            got = json.loads(line)
            out[got["name"]] = (f"{got['cold']:.2f} / {got['warm']:.2f}" if "cold" in got
                                else f"not run: {got['error']}")
    if ran.returncode:
        out.setdefault("", f"RadEval's run exited {ran.returncode}: {ran.stderr.strip().splitlines()[-1:]}")
    return out


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
    parser.add_argument("--radeval", metavar="PYTHON", help="a Python with RadEval 2.2 installed")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    with tempfile.TemporaryDirectory(prefix="rexrank-rewards-") as work:
        stand_ins(Path(work), args.real_size)
        from rexrank.scorers import REGISTRY

        print(f"{args.samples} samples a step, {args.steps} steps, torch threads {torch.get_num_threads()}, "
              f"{'768-wide' if args.real_size else 'tiny'} random-weight stand-ins")
        theirs = radeval_timed(args.radeval, Path(work), args.samples, args.steps) if args.radeval else {}
        print("| metric | rexrank cold ms/sample | rexrank warm ms/sample | RadEval cold / warm ms/sample |")
        print("|---|---:|---:|---|")
        for name, made in REGISTRY.items():
            if not made.report or made.judged:  # a judge's cost is its server's
                continue
            cold, warm = timed(name, args.samples, args.steps)
            other = theirs.get(name, "no metric of this name" if args.radeval and name not in RADEVAL_METRICS
                               else RADEVAL)
            print(f"| {name} | {cold:.2f} | {warm:.2f} | {other} |", flush=True)
        if "" in theirs:
            print(theirs[""])
    return 0


if __name__ == "__main__":
    sys.exit(main())
