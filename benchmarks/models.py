"""BERTScore and CheXbert/SembScore side by side with the reference packages, on real-size random-weight models.

    python benchmarks/models.py [--pairs 2347] [--reference-python .venv-reference/bin/python]

Models: distilroberta-base and bert-base shapes (768 hidden; 6 and 12 layers), random weights, tokenizers
trained on the synthetic sentences (whole words, so token counts are close to the real vocabularies').
Measured, on the same pairs and threads:
- BERTScore: rexrank cold (empty feature cache), rexrank warm (a second system against the same references),
  bert-score 0.3.13 in this process (`bert_score.score`, batch 64, rexrank's layer, rescaled);
- CheXbert: rexrank cold and warm (embeddings and labels from one pass), f1chexbert 0.0.2 in the reference
  venv (transformers 4; timed inside that process around the `get_label` of every reference and candidate,
  which is `F1CheXbert.forward` before its sklearn report; model loading excluded);
- the bare encoder forward pass over the same distinct texts, batched and length-sorted: the roofline (RaTEScore's
  two encoders each: the tagger over the distinct sentences, BioLORD over the distinct entity texts).
Each row of the table is printed as soon as it is measured (a cut run still says what it measured); `--json FILE`
also writes the numbers.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

import torch  # noqa: E402
from fixtures.reference_venv import hf_cache_entry, run_job  # noqa: E402
from fixtures.tiny_models import (  # noqa: E402
    build_bert_base,
    build_biolord,
    build_chexbert_checkpoint,
    build_radgraph,
    build_rate_ner,
    build_roberta,
)
from synthetic import pairs, varied_pairs  # noqa: E402

from rexrank.cache import FeatureCache  # noqa: E402
from rexrank.scorers.bertscore import LAYER  # noqa: E402
from rexrank.scorers.radgraph import tokenize_report  # noqa: E402

ENV = {"roberta": "REXRANK_MODEL_BERTSCORE", "checkpoint": "REXRANK_MODEL_CHEXBERT",
       "bert": "REXRANK_MODEL_BERT_BASE_UNCASED", "radgraph": "REXRANK_MODEL_RADGRAPH",
       "ner": "REXRANK_MODEL_RATE_NER", "biolord": "REXRANK_MODEL_BIOLORD"}


def scratch(prefix: str) -> Path:
    """A new folder for a benchmark's models and feature caches, removed when the benchmark ends (GBs at scale:
    ten runs' leftovers once filled the disk)."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, work, True)
    return work


def name_to_rexrank(**models: Path) -> None:
    """Point rexrank at the built models (roberta=..., bert=...: the keys of ENV)."""
    os.environ.update({ENV[key]: str(path) for key, path in models.items()})


def encoders(work: Path, layers: int | None = None) -> tuple[Path, Path, Path]:
    """Real-size random distilroberta-base and bert-base (with a CheXbert checkpoint on it), named to rexrank;
    `layers`: that many layers each instead of the real 6 and 12 (the same width, so the same features; at least the
    layer BERTScore reads for distilroberta)."""
    roberta = build_roberta(work / "distilroberta", layers=max(layers or 6, LAYER), hidden=768, heads=12,
                            intermediate=3072, vocab_size=5000, model_vocab=50265)
    bert = build_bert_base(work / "bert-base-uncased", hidden=768, layers=layers or 12, heads=12, intermediate=3072,
                           vocab_size=5000, model_vocab=30522, whole_words_below=100)
    checkpoint = build_chexbert_checkpoint(work / "chexbert" / "chexbert.pth", bert)
    name_to_rexrank(roberta=roberta, checkpoint=checkpoint, bert=bert)
    return roberta, bert, checkpoint


def radgraph_archive(work: Path, bert: Path) -> Path:
    """A RadGraph v1 archive with a bert-base encoder and DyGIE++ heads of the real widths, named to rexrank."""
    radgraph = build_radgraph(work / "radgraph" / "radgraph", bert, ff=150, width_dim=20)
    name_to_rexrank(radgraph=radgraph)
    return radgraph


def rate_models(work: Path, texts: list[str], layers: int | None = None) -> tuple[Path, Path]:
    """RaTEScore's DeBERTa-v3-base tagger and MPNet-base BioLORD, tokenizers trained on `texts`, named to rexrank
    (`layers`: as in `encoders`)."""
    ner = build_rate_ner(work / "rate-ner", hidden=768, layers=layers or 12, heads=12, intermediate=3072,
                         model_vocab=128100, whole_words_below=100, corpus_texts=texts, initializer_range=0.02)
    encoder = build_biolord(work / "biolord", hidden=768, layers=layers or 12, heads=12, intermediate=3072,
                            model_vocab=30527, corpus_texts=texts, initializer_range=0.02)
    name_to_rexrank(ner=ner, biolord=encoder)
    return ner, encoder


def timed(fn):
    """(seconds, fn()), the GPU's queued work included."""
    start = time.perf_counter()
    out = fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start, out


def roofline(net, token_ids, batch_size=32) -> float:
    """Seconds for the bare forward pass over `token_ids`, length-sorted batches, no tokenisation or math."""
    order = sorted(token_ids, key=len, reverse=True)
    start = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(order), batch_size):
            batch = order[i:i + batch_size]
            width = max(map(len, batch))
            ids = torch.tensor([b + [0] * (width - len(b)) for b in batch])
            mask = torch.tensor([[1] * len(b) + [0] * (width - len(b)) for b in batch])
            net(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - start


def bare_seconds(metric: str, scorer, texts: list[str]) -> float:
    """The roofline of a model metric: its encoder's bare forward pass over the distinct `texts` (RadGraph: their
    512-piece segments; RaTEScore: the tagger over the distinct sentences, BioLORD not counted)."""
    texts = list(dict.fromkeys(texts))
    if metric == "bertscore":
        return roofline(scorer.encoder.net, scorer.encoder.token_ids(texts))
    if metric == "semb_score":
        return roofline(scorer.model.net.bert, scorer.model.token_ids(texts))
    if metric == "radgraph":
        model = scorer.model
        return roofline(model.bert, [s for t in texts for s in model._segments(model._pieces(tokenize_report(t))[0])])
    from rexrank.ratescore_sentences import ratescore_sentences

    ner = scorer.model.ner
    sentences = list(dict.fromkeys(s for t in texts for s in ratescore_sentences(t)))
    return roofline(ner.net, [e.ids for e in ner.tokenizer.encode_batch(sentences)])


def bert_score_seconds(work: Path, roberta: Path, cands: list[str], refs: list[str], device: str | None = None
                       ) -> float:
    """bert-score (`bert_score.score`, batch 64, rexrank's layer) on the pairs, in this process, load and warm-up
    excluded; on a copy of the model whose tokenizer adds the prefix space bert-score's RoBERTa expects."""
    import bert_score

    oracle = work / "oracle"
    oracle.mkdir(exist_ok=True)
    for f in roberta.iterdir():
        (oracle / f.name).write_bytes(f.read_bytes())
    settings = json.loads((oracle / "tokenizer_config.json").read_text())
    (oracle / "tokenizer_config.json").write_text(json.dumps(settings | {"add_prefix_space": True}))
    squeeze = [re.sub(r" +", " ", t) for t in cands], [re.sub(r" +", " ", t) for t in refs]
    run = {"model_type": str(oracle), "num_layers": LAYER, "device": device}
    bert_score.score(squeeze[0][:8], squeeze[1][:8], **run)  # load, warm up
    return timed(lambda: bert_score.score(*squeeze, batch_size=64, **run))[0]


def run_scorer(make, cands, refs, second, cache_file):
    """Cold run, then a warm run of a second system against the same references; fresh scorer each time."""
    times = []
    for candidates in (cands, second):
        scorer = make()
        scorer.cache = FeatureCache(cache_file)
        scorer.features(["Heart size is normal."])  # loads the model outside the timing, caches nothing
        times.append(timed(lambda: scorer(candidates, refs))[0])  # noqa: B023 (called at once)
    return *times, scorer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=2347)
    parser.add_argument("--reference-python", default=str(ROOT / ".venv-reference" / "bin" / "python"))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--reference-pairs", type=int, default=100,
                        help="pairs given to ratescore 0.6.0 (seconds per pair; the whole set takes hours)")
    parser.add_argument("--only", default="bertscore,chexbert,radgraph,ratescore",
                        help="which of bertscore,chexbert,radgraph,ratescore")
    args = parser.parse_args()
    n = args.pairs
    cands, refs = pairs(n, seed=0)
    second, _ = pairs(n, seed=1)  # another system's reports against the same references
    work = scratch("rexrank-bench-")
    # RaTEScore builds its own models; the other three share these (minutes to build and write)
    roberta, bert, checkpoint = encoders(work) if set(args.only.split(",")) - {"ratescore"} else (None,) * 3

    distinct = len(set(cands + refs))
    print(f"{n:,} pairs ({distinct:,} distinct texts), torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"\n{'metric':<10} {'implementation':<44} {'pairs':>6} {'seconds':>8} {'pairs/s':>8} {'cold is':>11}",
          flush=True)
    rows: list = []

    def report(metric: str, name: str, seconds: float, count: int = n) -> None:
        """Print the row now; `cold is` against this metric's rexrank cold row, measured first."""
        rows.append((metric, name, seconds, count))
        ours = next(c / s for m, k, s, c in rows if m == metric and k == "rexrank cold")
        print(f"{metric:<10} {name:<44} {count:6d} {seconds:8.1f} {count / seconds:8.2f} "
              f"{ours / (count / seconds):10.2f}x", flush=True)

    if "bertscore" in args.only:
        bertscore_rows(args, work, roberta, cands, refs, second, report)
    if "chexbert" in args.only:
        chexbert_rows(args, work, bert, checkpoint, cands, refs, second, report)
    if "radgraph" in args.only:
        radgraph_rows(args, work, bert, cands, refs, second, report)
    if "ratescore" in args.only:
        ratescore_rows(args, work, report)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:,.0f} MiB")
    if args.json:
        Path(args.json).write_text(json.dumps({"pairs": n, "distinct_texts": distinct, "threads":
                                               torch.get_num_threads(), "rows": rows, "peak_mib": peak}, indent=2))


def bertscore_rows(args, work, roberta, cands, refs, second, report) -> None:
    from rexrank.scorers.bertscore import BertScore

    cold, warm, scorer = run_scorer(lambda: BertScore(batch_size=args.batch_size, progress=False), cands, refs,
                                    second, work / "bertscore.sqlite")
    report("BERTScore", "rexrank cold", cold)
    report("BERTScore", "rexrank warm (2nd system)", warm)
    report("BERTScore", "bare encoder forward", bare_seconds("bertscore", scorer, cands + refs))
    try:
        report("BERTScore", "bert-score 0.3.13", bert_score_seconds(work, roberta, cands, refs))
    except ImportError:
        print("bert-score not installed: pip install bert-score==0.3.13")


def chexbert_rows(args, work, bert, checkpoint, cands, refs, second, report) -> None:
    from rexrank.scorers.semb import SembScore

    cold, warm, scorer = run_scorer(lambda: SembScore(batch_size=args.batch_size, progress=False), cands, refs,
                                    second, work / "chexbert.sqlite")
    report("CheXbert", "rexrank cold", cold)
    report("CheXbert", "rexrank warm (2nd system)", warm)
    report("CheXbert", "bare encoder forward", bare_seconds("semb_score", scorer, cands + refs))
    if Path(args.reference_python).exists():
        seconds = f1chexbert_job(args.reference_python, work, bert, checkpoint, cands, refs)["f1chexbert_seconds"]
        report("CheXbert", "f1chexbert 0.0.2 (labels only)", seconds)
    else:
        print(f"no reference venv at {args.reference_python}: tests/parity/make_venv.sh builds it")


def radgraph_rows(args, work, bert, cands, refs, second, report) -> None:
    radgraph = radgraph_archive(work, bert)
    from rexrank.scorers.radgraph import RadGraphF1

    cold, warm, scorer = run_scorer(lambda: RadGraphF1(batch_size=args.batch_size, progress=False), cands, refs,
                                    second, work / "radgraph.sqlite")
    report("RadGraph", "rexrank cold", cold)
    report("RadGraph", "rexrank warm (2nd system)", warm)
    report("RadGraph", "bare encoder forward", bare_seconds("radgraph", scorer, cands + refs))
    if Path(args.reference_python).exists():
        report("RadGraph", "radgraph 0.1.18 (one report/forward)",
               run_job(args.reference_python, work, {"radgraph": {
                   "model": str(radgraph), "texts": refs + cands, "timing": True}},
                   timeout=24 * 3600)["radgraph_seconds"])


def ratescore_rows(args, work, report) -> None:
    """RaTEScore on template reports (about half their sentences distinct, as in real reports; the fixed
    synthetic sentences would make sentence deduplication look better than it is)."""
    cands, refs = varied_pairs(args.pairs, seed=0)
    second, _ = varied_pairs(args.pairs, seed=1)
    ner, encoder = rate_models(work, cands + refs + second)
    from rexrank.ratescore_sentences import ratescore_sentences
    from rexrank.scorers.ratescore import RaTEScore

    sentences = [s for t in cands + refs for s in ratescore_sentences(t)]
    print(f"RaTEScore: {len(set(cands + refs)):,} distinct texts, {len(sentences):,} sentences "
          f"({len(set(sentences)):,} distinct)", flush=True)
    cold, warm, scorer = run_scorer(lambda: RaTEScore(batch_size=args.batch_size, progress=False), cands, refs,
                                    second, work / "ratescore.sqlite")
    report("RaTEScore", "rexrank cold", cold)
    report("RaTEScore", "rexrank warm (2nd system)", warm)
    print(f"{'':<10} (near ties given per-report vectors in the warm run: {scorer.rescored} of {len(cands)} pairs)")
    ner_bare = bare_seconds("ratescore", scorer, cands + refs)
    report("RaTEScore", "bare NER forward (distinct sentences)", ner_bare)
    biolord_bare = biolord_seconds(scorer, cands + refs)
    report("RaTEScore", "bare BioLORD forward (distinct entities)", biolord_bare)
    report("RaTEScore", "both encoders' bare forward", ner_bare + biolord_bare)
    tied, tied_bare = near_tie_seconds(scorer, cands, refs)
    report("RaTEScore", f"bare BioLORD per-report passes ({tied} near ties)", tied_bare)
    exact = ner_bare + biolord_bare + tied_bare  # the encoder work a result bit for bit the reference's needs
    print(f"{'':<10} rexrank cold at {ner_bare / cold:.0%} of the NER's bare forward, "
          f"{(ner_bare + biolord_bare) / cold:.0%} of both encoders', {exact / cold:.0%} counting the per-report "
          "passes its near ties need (the reference's bits: docs/reference-notes/ratescore.md)", flush=True)
    if Path(args.reference_python).exists():  # the reference tags one sentence per pass: a subset
        k = min(args.reference_pairs, len(cands))
        answer = run_job(args.reference_python, work, {"ratescore": {
            "ner": str(ner), "encoder": str(encoder), "candidates": cands[:k], "references": refs[:k],
            "timing": True}}, timeout=24 * 3600)
        print(f"ratescore 0.6.0 peak resident memory: {answer['max_rss_mib']:,.0f} MiB")
        fresh = RaTEScore(batch_size=args.batch_size, progress=False)
        fresh.cache = FeatureCache(work / "ratescore-subset.sqlite")
        fresh.features(["Heart size is normal."])
        report("RaTEScore", f"rexrank cold, first {k} pairs", timed(lambda: fresh(cands[:k], refs[:k]))[0], k)
        report("RaTEScore", "ratescore 0.6.0 (batch_size 1)", answer["ratescore_seconds"], k)


def biolord_seconds(scorer, texts: list[str]) -> float:
    """BioLORD's bare forward over the distinct entity texts the tagger finds in `texts` (their features cached)."""
    distinct = list(dict.fromkeys(texts))
    features = scorer.cache.get_or_compute(scorer.cache_namespace(), distinct, scorer.features)
    entities = list(dict.fromkeys(t for f in features for t in f[0].tolist()))
    encoder = scorer.model.encoder
    return roofline(encoder.net, [e.ids for e in encoder.tokenizer.encode_batch(entities)])


def near_tie_seconds(scorer, cands: list[str], refs: list[str]) -> tuple[int, float]:
    """(pairs, seconds): BioLORD's bare forward over the reports of the near-tie pairs, one padded pass per report as
    the reference runs them (their features cached): encoder work the reference's tie-breaking demands."""
    from rexrank.scorers.ratescore import near_tie

    features = dict(zip(cands + refs, scorer.cache.get_or_compute(scorer.cache_namespace(), cands + refs,
                                                                  scorer.features)))
    pairs = [(c, r) for c, r in zip(cands, refs)
             if near_tie(*((features[t][2], features[t][1].tolist()) for t in (c, r)))]
    encoder = scorer.model.encoder
    seconds = 0.0
    for text in dict.fromkeys(t for pair in pairs for t in pair):
        ids = [e.ids for e in encoder.tokenizer.encode_batch(features[text][0].tolist())]
        seconds += roofline(encoder.net, ids, batch_size=len(ids)) if ids else 0.0
    return len(pairs), seconds


def f1chexbert_job(python, work, bert, checkpoint, cands, refs, device: str = "cpu") -> dict:
    """f1chexbert in the transformers-4 venv, timed inside it (the same HF-cache layout as the parity tests):
    its answer, with `f1chexbert_seconds` and `max_rss_mib`."""
    hf_cache_entry(work / "hf", "bert-base-uncased", bert)
    (work / "xdg" / "chexbert").mkdir(parents=True, exist_ok=True)
    if not (work / "xdg" / "chexbert" / "chexbert.pth").exists():
        (work / "xdg" / "chexbert" / "chexbert.pth").symlink_to(checkpoint)
    return run_job(python, work, {"device": device, "f1chexbert_timing": {"hyps": cands, "refs": refs}},
                   timeout=24 * 3600)


if __name__ == "__main__":
    main()
