"""The six-metric `rexrank score` against the sum of the reference packages, on real-size random-weight models.

    python benchmarks/score.py [--pairs 300] [--reference-python .venv-reference/bin/python]

One system's reports (template reports, about half their sentences distinct) are scored with every non-LLM
metric (bleu2, bertscore, semb_score, radgraph, ratescore, radcliq_v1) through `rexrank.scorecard.score`, the
code behind `rexrank score`: cold (empty feature cache), then warm (a second system against the same
references). Model loading is excluded. The peers run on the same pairs and threads: NLTK's `sentence_bleu`
(method1, what our BLEU-2 parity uses; fast-bleu is 2x slower still), bert-score 0.3.13 in this process,
f1chexbert 0.0.2, radgraph 0.1.18 and ratescore 0.6.0 in the reference venv (transformers 4), each timed inside
its process. RadCliQ is arithmetic on the four. f1chexbert gives CheXbert's labels only; CXR-Report-Metric makes
SembScore's embeddings in a second pass, so the peers' sum is a lower bound.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

import pandas as pd  # noqa: E402
import torch  # noqa: E402
from fixtures.reference_venv import run_job  # noqa: E402
from models import encoders, f1chexbert_seconds, radgraph_archive, rate_models, timed  # noqa: E402
from synthetic import varied_pairs  # noqa: E402


def build_models(work: Path, texts: list[str]) -> None:
    """The real-size random models of `models.py`, named to rexrank through REXRANK_MODEL_*."""
    _, bert, _ = encoders(work)
    radgraph_archive(work, bert)
    rate_models(work, texts)


def ours(work: Path, cands: list[str], refs: list[str], second: list[str]) -> tuple[float, float]:
    from rexrank.scorecard import MetricSet, score
    from rexrank.scorers import AVAILABLE

    os.environ["REXRANK_CACHE"] = str(work / "features.sqlite")
    metrics = MetricSet(list(AVAILABLE), progress=False)
    warmup = pd.DataFrame({"study_id": ["warm-up"], "prediction": ["Heart size is normal."],
                           "reference": ["No pleural effusion."]})
    score(warmup, metrics, resamples=10)  # loads every model outside the timing
    frame = lambda c: pd.DataFrame({"study_id": [f"s{i}" for i in range(len(c))], "prediction": c,  # noqa: E731
                                    "reference": refs})
    cold, card = timed(lambda: score(frame(cands), metrics))
    warm, _ = timed(lambda: score(frame(second), metrics))
    missing = set(AVAILABLE) - set(card.metrics)
    assert not missing, f"not scored: {missing}"
    return cold, warm


def peers(args, work: Path, cands: list[str], refs: list[str]) -> list[tuple[str, float]]:
    rows = []
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smooth = SmoothingFunction().method1
    rows.append(("BLEU-2: nltk sentence_bleu", timed(lambda: [
        sentence_bleu([r.lower().split()], c.lower().split(), weights=(0.5, 0.5), smoothing_function=smooth)
        for c, r in zip(cands, refs)])[0]))
    import bert_score

    model = os.environ["REXRANK_MODEL_BERTSCORE"]
    bert_score.score(cands[:8], refs[:8], model_type=model, num_layers=5)  # load, warm up
    rows.append(("BERTScore: bert-score 0.3.13", timed(lambda: bert_score.score(
        cands, refs, model_type=model, num_layers=5, batch_size=64))[0]))
    python = args.reference_python
    rows.append(("CheXbert: f1chexbert 0.0.2 (labels only)", f1chexbert_seconds(
        python, work, Path(os.environ["REXRANK_MODEL_BERT_BASE_UNCASED"]),
        Path(os.environ["REXRANK_MODEL_CHEXBERT"]), cands, refs)))
    answer = run_job(python, work, {"radgraph": {"model": os.environ["REXRANK_MODEL_RADGRAPH"],
                                                 "texts": refs + cands, "timing": True}})
    rows.append(("RadGraph: radgraph 0.1.18", answer["radgraph_seconds"]))
    answer = run_job(python, work, {"ratescore": {
        "ner": os.environ["REXRANK_MODEL_RATE_NER"], "encoder": os.environ["REXRANK_MODEL_BIOLORD"],
        "candidates": cands, "references": refs, "timing": True}}, timeout=24 * 3600)
    rows.append(("RaTEScore: ratescore 0.6.0", answer["ratescore_seconds"]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--reference-python", default=str(ROOT / ".venv-reference" / "bin" / "python"))
    args = parser.parse_args()
    cands, refs = varied_pairs(args.pairs, seed=0)
    second, _ = varied_pairs(args.pairs, seed=1)
    work = Path(tempfile.mkdtemp(prefix="rexrank-bench-score-"))
    build_models(work, cands + refs + second)
    print(f"{args.pairs:,} pairs, torch {torch.__version__}, {torch.get_num_threads()} threads")
    cold, warm = ours(work, cands, refs, second)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = peers(args, work, cands, refs)
    total = sum(s for _, s in rows)
    n = args.pairs
    print(f"\n{'implementation':<44} {'seconds':>8} {'pairs/s':>8}")
    for name, seconds in rows:
        print(f"{name:<44} {seconds:8.1f} {n / seconds:8.2f}")
    print(f"{'sum of the peers':<44} {total:8.1f} {n / total:8.2f}")
    print(f"{'rexrank score, six metrics, cold':<44} {cold:8.1f} {n / cold:8.2f}   {total / cold:.1f}x the peers")
    print(f"{'rexrank score, six metrics, warm':<44} {warm:8.1f} {n / warm:8.2f}   {total / warm:.1f}x the peers")
    print(f"peak resident memory of the rexrank process: {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
