"""Runs inside the reference venv (transformers 4): the reference packages on a job file, answers in a file.

    python run_references.py JOB.json OUT.json

JOB (every answer also carries "max_rss_mib", the process's peak resident memory; "device": "cuda" runs the
packages that can on the GPU, default "cpu"):
     {"bertscore": {"model": DIR, "baseline": TSV, "candidates": [...], "references": [...]},  (0.3.13's scores
      and tokens, and 0.3.11's: its sent_encode without RoBERTa's leading space on transformers >= 4.17)
      "f1chexbert": {"texts": [...]},
      "f1chexbert_timing": {"hyps": [...], "refs": [...]},  (seconds of labelling them, load excluded)
      "radgraph": {"model": DIR, "texts": [...], "reward_pairs": [hyps, refs], "timing": bool}}  (DIR: a v1
      archive folder; graphs as the package gives them, and F1RadGraph's rewards per pair; with timing, only
      the seconds of graphing the texts, model load excluded)
      "ratescore": {"ner": DIR, "encoder": DIR, "candidates": [...], "references": [...], "texts": [...],
                    "timing": bool}  (compute_score's list and seconds; unless timing, per text its entities
      and their BioLORD vectors, one report per run_ner call so that none is dropped)
      "rush": {"texts": [...]}  (per text the sentences RaTEScore's sentence_split keeps, each text split
      as the first of a fresh process: C rand(), which orders PyRuSH's overlap index, reset; see
      rexrank.ratescore_sentences)
-- f1chexbert reads bert-base-uncased from the HF cache and its
checkpoint from appdirs' user_cache_dir("chexbert"), which the caller lays out (HF_HOME, XDG_CACHE_HOME).
"""

import json
import re
import sys

job = json.load(open(sys.argv[1]))
out = {}
DEVICE = job.get("device", "cpu")
CUDA = DEVICE.startswith("cuda")
if "bertscore" in job:
    import bert_score

    spec = job["bertscore"]
    squeeze = [[re.sub(r" +", " ", t) for t in spec[side]] for side in ("candidates", "references")]
    for idf in (False, True):
        p, r, f = bert_score.score(*squeeze, model_type=spec["model"], num_layers=spec["layer"], idf=idf, batch_size=64,
                                   lang="en", rescale_with_baseline=True, baseline_path=spec["baseline"])
        out[f"bertscore_idf={idf}"] = f.tolist()
    tokenizer = bert_score.utils.get_tokenizer(spec["model"], use_fast=False)
    out["bertscore_tokens"] = [bert_score.utils.sent_encode(tokenizer, t) for t in squeeze[0] + squeeze[1]]
    # bert-score 0.3.11 differs from 0.3.13 in one check only: sent_encode adds the leading space for a
    # GPT2Tokenizer, not for a RobertaTokenizer, which stopped being one in transformers 4.17. That check, here:
    bert_score.utils.RobertaTokenizer = type("NotARobertaTokenizer", (), {})
    for idf in (False, True):
        p, r, f = bert_score.score(*squeeze, model_type=spec["model"], num_layers=spec["layer"], idf=idf, batch_size=64,
                                   lang="en", rescale_with_baseline=True, baseline_path=spec["baseline"])
        out[f"bertscore_0.3.11_idf={idf}"] = f.tolist()
    out["bertscore_0.3.11_tokens"] = [bert_score.utils.sent_encode(tokenizer, t) for t in squeeze[0] + squeeze[1]]
if "f1chexbert" in job:
    from f1chexbert import F1CheXbert

    model = F1CheXbert(device="cpu")
    out["f1chexbert_labels"] = [model.get_label(t.strip()) for t in job["f1chexbert"]["texts"]]
if "f1chexbert_timing" in job:
    import time

    import torch
    from f1chexbert import F1CheXbert

    model = F1CheXbert(device=DEVICE)
    spec = job["f1chexbert_timing"]
    start = time.perf_counter()  # what forward() does before its sklearn report (whose 0.0.2 call fails on
    for text in spec["refs"] + spec["hyps"]:  # current sklearn): one get_label per report, refs then hyps
        model.get_label(text.strip())
    if CUDA:
        torch.cuda.synchronize()
    out["f1chexbert_seconds"] = time.perf_counter() - start
    out["threads"] = torch.get_num_threads()
if "radgraph" in job:
    import shutil
    import tempfile
    from pathlib import Path

    import torch
    from dotmap import DotMap
    from radgraph import RadGraph
    from radgraph.allennlp.data import Vocabulary
    from radgraph.allennlp.modules import text_field_embedders, token_embedders
    from radgraph.dygie.models import dygie

    spec = job["radgraph"]
    cache = Path(tempfile.mkdtemp())
    shutil.copytree(spec["model"], cache / "radgraph")
    # The package loads weights.th strictly: add the unused coref/events tensors a real file carries.
    config = DotMap(json.load(open(cache / "radgraph" / "config.json")))
    vocab = Vocabulary.from_files(str(cache / "radgraph" / "vocabulary"), None, None)
    embedder = token_embedders.PretrainedTransformerMismatchedEmbedder(
        model_name=config.model.embedder.token_embedders.bert.model_name, max_length=512)
    settings = config.model
    for key in ("type", "embedder", "initializer", "module_initializer"):
        del settings[key]
    complete = dygie.DyGIE(vocab=vocab, embedder=text_field_embedders.BasicTextFieldEmbedder({"bert": embedder}),
                           **settings).state_dict()
    complete.update(torch.load(cache / "radgraph" / "weights.th", weights_only=True))
    torch.save(complete, cache / "radgraph" / "weights.th")
    model = RadGraph(model_type="radgraph", model_cache_dir=str(cache), cuda=0 if CUDA else -1)
    if spec.get("timing"):
        import time

        model(spec["texts"][:4])  # warm up
        start = time.perf_counter()
        model(spec["texts"])
        if CUDA:
            torch.cuda.synchronize()
        out["radgraph_seconds"] = time.perf_counter() - start
    else:
        out["radgraph"] = model(spec["texts"])
    if "reward_pairs" in spec:
        from radgraph import F1RadGraph

        hyps, refs = spec["reward_pairs"]
        f1radgraph = F1RadGraph(reward_level="all", model_type="radgraph", model_cache_dir=str(cache), cuda=-1)
        out["f1radgraph"] = [list(map(float, level)) for level in f1radgraph(hyps=hyps, refs=refs)[1]]
if "ratescore" in job:
    import time

    from loguru import logger

    logger.remove()  # PyRuSH 1.0.13 logs DEBUG lines for every document
    from RaTEScore import RaTEScore
    from RaTEScore.score import process_embedding, run_ner

    spec = job["ratescore"]
    scorer = RaTEScore(bert_model=spec["ner"], eval_model=spec["encoder"], use_gpu=CUDA)
    start = time.perf_counter()
    out["ratescore"] = scorer.compute_score(spec["candidates"], spec["references"])
    out["ratescore_seconds"] = time.perf_counter() - start
    if not spec.get("timing"):
        entities = [(run_ner([text], scorer.idx2label, scorer.tokenizer, scorer.model, "cpu", 1) or [[]])[0]
                    for text in spec["texts"]]
        out["ratescore_entities"] = entities
        out["ratescore_embeddings"] = [process_embedding(e, scorer.eval_tokenizer, scorer.eval_model, "cpu")[0]
                                       .tolist() for e in entities]
if "rush" in job:
    import ctypes

    from loguru import logger

    logger.remove()  # PyRuSH 1.0.13 logs DEBUG lines for every document
    from RaTEScore.utils import sentence_split

    libc = ctypes.CDLL(None)
    out["rush_sentences"] = []
    for text in job["rush"]["texts"]:
        libc.srand(1)  # glibc's start state, plus the one rand() quicksectx draws at import
        libc.rand()
        out["rush_sentences"].append(sentence_split([text])[0])  # one report a call: its own list, even empty
with open("/proc/self/status") as status:  # VmHWM: ru_maxrss would start at the parent's size at fork
    out["max_rss_mib"] = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024
json.dump(out, open(sys.argv[2], "w"))
