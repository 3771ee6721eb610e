"""The private run's speed: rexrank's runner (rexrank.inference.hf_runner) at batch 1 and batched, side by side.

    python benchmarks/private_run.py [--studies 48] [--max-new-tokens 32] [--batch-size 8] [--json FILE]
    python benchmarks/private_run.py --device cuda --real-size [--studies 64] [--max-new-tokens 256]

Synthetic studies of one to three PNGs (tests/fixtures/vision_models.synthetic_pngs) with contexts of different
lengths, in `multi` mode, go through the runner's own pieces (its order, image loading, instruction and
`generate_batch`), model loading excluded, at batch 1 and batched in turn, `--repeats` times each (the fastest
of each is kept: the machine may be shared). On the CPU the models are the tests'
tiny stand-ins of google/medgemma-4b-it (Gemma 3) and IAMJB/chexpert-mimic-cxr-findings-baseline
(VisionEncoderDecoder). With --real-size (a GPU) the Gemma 3 model has MedGemma 4B's real shape (SigLIP 896 px and
256 image tokens, 34 layers, hidden 2560, a 262,208-token vocabulary) with random weights in bf16, which never
stop early: every study decodes all its new tokens, the worst case. Each row is printed as it is measured; the
last line says the batched/batch-1 ratio, whether every study's text is identical, and, with --real-size, the
hours 10,000 studies would take.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests")]

from fixtures.vision_models import (  # noqa: E402
    build_tiny_gemma3,
    build_tiny_vision_encoder_decoder,
    synthetic_pngs,
)
from models import scratch  # noqa: E402

from rexrank.inference import batching, hf_runner  # noqa: E402
from rexrank.inference.hf_models import load_generator  # noqa: E402

PRIVATE_STUDIES = 10_000


def studies(folder: Path, n: int) -> dict[str, dict]:
    """n synthetic studies of 1-3 images each, some with a clinical context of 1-3 sentences."""
    ids = [f"pat{i:05d}_study{i}" for i in range(n)]
    paths = synthetic_pngs(folder, ids, views=3)
    return {sid: {"image_path": paths[sid][:1 + i % 3], "context": "Synthetic indication: cough. " * (i % 4),
                  "split": "test"} for i, sid in enumerate(ids)}


def generate_all(generator, records: dict, root: Path, size: int) -> tuple[float, dict[str, str]]:
    """Seconds and texts for every study at batches of up to `size`, as hf_runner.run generates them."""
    mode = "multi" if generator.reads_prompt else "single"
    load = hf_runner.study_loader(records, str(root), "findings", mode)
    order, counts = hf_runner.plan(records, list(records), "findings", mode)
    texts: dict[str, str] = {}

    def finished(batch, results, seconds):
        texts.update((sid, text) for sid, (text, _) in zip(batch, results, strict=True))

    started = time.perf_counter()
    batching.generate(lambda batch: generator.generate_batch([load(sid) for sid in batch]), order, counts, size,
                      finished, lambda message: print(f"  {message}", flush=True))
    sync()
    return time.perf_counter() - started, texts


def sync() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def real_size_gemma3(folder: Path, tiny: Path) -> Path:
    """MedGemma 4B's shape with random bf16 weights, the tiny stand-in's tokenizer (filled up to the real
    vocabulary's 262,208 ids) and chat template, 896-pixel images and 256 image tokens (the real processor's)."""
    import torch
    from transformers import AutoProcessor, Gemma3Config, Gemma3ForConditionalGeneration

    processor = AutoProcessor.from_pretrained(tiny)
    processor.image_processor.size = {"height": 896, "width": 896}
    processor.image_seq_length = 256  # saved, then read back: the loaded processor expands each image to 256
    # A token for every id the real vocabulary has, so that texts decoded from random ids can be compared
    processor.tokenizer.add_tokens([f"<t{i}>" for i in range(len(processor.tokenizer), 262_208)])
    small = Gemma3Config.from_pretrained(tiny)
    config = Gemma3Config(
        text_config={"vocab_size": 262_208, "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 34,
                     "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 1024},
        vision_config={"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                       "num_attention_heads": 16, "image_size": 896, "patch_size": 14},
        mm_tokens_per_image=256, boi_token_index=small.boi_token_index, eoi_token_index=small.eoi_token_index,
        image_token_index=small.image_token_index, pad_token_id=small.pad_token_id, bos_token_id=small.bos_token_id,
        eos_token_id=small.eos_token_id)
    with torch.device("cuda"):
        model = Gemma3ForConditionalGeneration(config).to(torch.bfloat16)
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def measure(name: str, folder: Path, records: dict, root: Path, args) -> dict:
    generator, device, dtype = load_generator(str(folder), "0" * 40, args.device, args.max_new_tokens)
    with contextlib.redirect_stderr(io.StringIO()):
        generate_all(generator, dict(list(records.items())[:2]), root, 2)  # warm-up: first calls, kernels
    size = args.batch_size or batching.batch_size(None, device, lambda: generator.study_bytes(
        *hf_runner.study_loader(records, str(root), "findings", "multi")(next(iter(records)))), None)
    seconds, texts = {1: [], size: []}, {}
    for _ in range(args.repeats):  # alternated, the fastest of each kept: the machine may be shared
        for batch in (1, size):
            took, texts[batch] = generate_all(generator, records, root, batch)
            seconds[batch].append(took)
            print(f"{name:<28} batch {batch:<3} {len(records)} studies {took:8.1f} s "
                  f"{len(records) / took:8.2f} studies/s", flush=True)
    one, many = min(seconds[1]), min(seconds[size])
    same = sum(texts[1][sid] == texts[size][sid] for sid in records)
    print(f"{name:<28} fastest: batch 1 {one:.1f} s, batch {size} {many:.1f} s: {one / many:.2f}x; "
          f"{same}/{len(records)} texts identical", flush=True)
    return {"model": name, "device": device, "dtype": dtype, "studies": len(records), "batch": size,
            "batch1_s": one, "batched_s": many, "ratio": one / many, "identical": same,
            "distinct_texts": len(set(texts[1].values()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=48)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, help="default: the runner's choice (CPU 8; fitted on a GPU)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--real-size", action="store_true", help="MedGemma 4B's shape, random bf16 weights (GPU)")
    parser.add_argument("--json")
    args = parser.parse_args()
    import torch

    work = scratch("rexrank-private-run-")
    records = studies(work / "images", args.studies)
    print(f"{args.studies} studies (1-3 images), max_new_tokens {args.max_new_tokens}, {args.device}, torch "
          f"{torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    with contextlib.redirect_stderr(io.StringIO()):
        tiny = build_tiny_gemma3(work / "medgemma-4b-it")
        models = {"medgemma-4b-it real size" if args.real_size else "medgemma-4b-it stand-in":
                  real_size_gemma3(work / "real", tiny) if args.real_size else tiny}
        if not args.real_size:
            models["chexpert-findings stand-in"] = build_tiny_vision_encoder_decoder(work / "ved")
    rows = [measure(name, folder, records, work / "images", args) for name, folder in models.items()]
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    ratio = min(r["ratio"] for r in rows)
    identical = all(r["identical"] == r["studies"] for r in rows)
    hours = ""
    if args.real_size:
        per_study = rows[0]["batched_s"] / rows[0]["studies"]
        hours = f"; {PRIVATE_STUDIES:,} studies: {PRIVATE_STUDIES * per_study / 3600:.2f} GPU-hours batched"
    print(f"batched/batch-1: {ratio:.2f}x (lowest of {len(rows)}); every output identical: "
          f"{'yes' if identical else 'no'}{hours}", flush=True)


if __name__ == "__main__":
    main()
