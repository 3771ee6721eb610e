"""rexrank's runner on vLLM (``runner: vllm`` in model.yaml), for the image-text-to-text models vLLM serves (Gemma 3 /
MedGemma, LLaVA, Qwen2-VL, ...): the same CLI, settings, input, output and resumption as rexrank.inference.hf_runner,
the same prompts (rexrank's instruction through the model's own chat template, rendered by its processor, so the
text is the one the transformers runner tokenises), greedy decoding (temperature 0) of at most
``REXRANK_MAX_NEW_TOKENS`` tokens, through vLLM's offline ``LLM.generate``::

    python -m rexrank.inference.vllm_runner --input_json_file X --save_json_file Y --img_root_dir Z/

The weights are the pinned snapshot in the local Hugging Face cache (``HF_HUB_OFFLINE=1``, never remote code). vLLM
schedules its own batches: the studies go to it ``REXRANK_BATCH_SIZE`` at a time (default CHUNK), and the save file
is written after each such chunk. On N GPUs visible to the process vLLM splits the model by tensor parallelism
(``REXRANK_TENSOR_PARALLEL``, default every visible GPU); data parallelism is rexrank.inference.runner's, one process
per GPU over contiguous blocks of studies. Without vLLM installed (it needs CUDA: the job image carries it, CPU CI
does not), or for an architecture it does not serve, the run stops with one line and exit 3 before reading an image.
"""

from __future__ import annotations

import os
import sys
import time

from rexrank.inference import hf_runner
from rexrank.inference.hf_models import messages
from rexrank.inference.hf_runner import EXIT_NO_MODEL, RunnerError

CHUNK = 512  # studies handed to vLLM at once: enough for its scheduler to keep a GPU full, few to redo when stopped
MISSING = ("vLLM is not installed in this environment (`runner: vllm` runs in rexrank's job image, which carries it); "
           "use `runner: transformers` to run the same model with transformers")


def engine():
    """vLLM's (LLM, SamplingParams), or RunnerError(MISSING)."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        raise RunnerError(MISSING, EXIT_NO_MODEL) from None
    return LLM, SamplingParams


def snapshot(repo: str, revision: str) -> str:
    """The pinned snapshot's folder in the local Hugging Face cache (vLLM is given a path: nothing is fetched)."""
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(repo, revision=revision, local_files_only=True)
    except Exception as err:  # noqa: BLE001 - any failure to find it is the same one line
        raise RunnerError(f"{repo}@{revision[:12]} is not in the local Hugging Face cache (HF_HUB_OFFLINE): "
                          f"{type(err).__name__}", EXIT_NO_MODEL) from None


def served(architectures: list[str], supported) -> str:
    """The model's architecture when vLLM serves it; RunnerError naming it otherwise."""
    known = [a for a in architectures if a in set(supported)]
    if not known:
        raise RunnerError(f"vLLM does not serve {', '.join(architectures) or 'this model'}: use `runner: "
                          "transformers`", EXIT_NO_MODEL)
    return known[0]


def requests(processor, studies: list[tuple[list, str]]) -> list[dict]:
    """vLLM prompts: each study's chat-template text (as hf_models.Generator tokenises it) and its images."""
    return [{"prompt": processor.apply_chat_template(messages(images, text), add_generation_prompt=True,
                                                     tokenize=False),
             "multi_modal_data": {"image": images}} for images, text in studies]


def results(outputs) -> list[tuple[str, int]]:
    """(text, tokens) of each vLLM RequestOutput, in the order of the requests (LLM.generate keeps it)."""
    return [(out.outputs[0].text.strip(), len(out.outputs[0].token_ids)) for out in outputs]


def load(settings: hf_runner.Settings, images_per_study: int):
    """vLLM's engine on the pinned snapshot, the model's processor, and greedy sampling parameters."""
    os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")  # the sandbox has no network: nothing to report to
    LLM, SamplingParams = engine()
    from transformers import AutoConfig, AutoProcessor

    folder = snapshot(settings.repo, settings.revision)
    config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
    from vllm import ModelRegistry

    served(list(config.architectures or []), ModelRegistry.get_supported_archs())
    processor = AutoProcessor.from_pretrained(folder, trust_remote_code=False)
    parallel = int(os.environ.get("REXRANK_TENSOR_PARALLEL", "0") or 0) or max(1, _gpus())
    llm = LLM(model=folder, tokenizer=folder, trust_remote_code=False, tensor_parallel_size=parallel, seed=0,
              dtype="auto", limit_mm_per_prompt={"image": images_per_study})
    return llm, processor, SamplingParams(temperature=0.0, max_tokens=settings.max_new_tokens)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


def say(message: str) -> None:
    print(f"vllm_runner: {message}", file=sys.stderr, flush=True)


def run(args, settings: hf_runner.Settings) -> int:
    engine()  # before any image is read: no vLLM, one line
    studies, done, todo = hf_runner.pending(args, settings)
    say(f"{len(todo)} studies to generate, {len(done)} kept from {args.save_json_file}")
    predictions = dict(done)
    if todo:
        loader = hf_runner.study_loader(studies, args.img_root_dir, settings.task, settings.images)
        order, counts = hf_runner.plan(studies, todo, settings.task, settings.images)
        llm, processor, sampling = load(settings, max(counts.values()))
        say(f"{settings.repo}@{settings.revision[:12]} on vLLM, task {settings.task}, images "
                      f"{settings.images}, greedy, max_new_tokens {settings.max_new_tokens}, prompt "
                      f"{hf_runner.PROMPT_VERSION}")
        size, started = settings.batch_size or CHUNK, time.monotonic()
        for start in range(0, len(order), size):
            chunk = order[start:start + size]
            outputs = llm.generate(requests(processor, [loader(sid) for sid in chunk]), sampling, use_tqdm=False)
            generated = results(outputs)
            predictions.update(zip(chunk, (text for text, _ in generated), strict=True))
            hf_runner.write_atomically(args.save_json_file, hf_runner.output(studies, predictions))
            say(f"[{start + len(chunk)}/{len(todo)}] {sum(n for _, n in generated)} tokens, "
                f"{time.monotonic() - started:.1f} s")
    hf_runner.write_atomically(args.save_json_file, hf_runner.output(studies, predictions))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = hf_runner.parse_args(argv)
    try:
        return run(args, hf_runner.settings_from_env())
    except RunnerError as err:
        print(f"vllm_runner: error: {err}", file=sys.stderr, flush=True)
        return err.status


if __name__ == "__main__":
    sys.exit(main())
