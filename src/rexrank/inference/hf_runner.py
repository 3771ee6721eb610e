"""rexrank's own inference script for a model whose weights are a standard `transformers` image-text-to-text model.

A submission whose model is such a repository may name only the repo: this module is then its `inference.py`,
run under ReXrank's contract inside the sandbox, with no network::

    python -m rexrank.inference.hf_runner --input_json_file X --save_json_file Y --img_root_dir Z/
    python -m rexrank.inference.hf_runner X Y Z/        # ReXrank round 1 passed the three positionally

The input JSON is ``{study_id: {"image_path": [...], "key_image_path": "...", "frontal_lateral": [...],
"context": "...", "split": "test"}}`` (no reference text); the output is the same studies, in the same order, each
with a ``model_prediction`` string added. Only those five fields are read; a study's other fields, if any, are not
read and not copied. Image paths are joined to the root as ReXrank's scripts join them (``img_root_dir +
image_path``, the root passed with a trailing slash; one without works too).

Settings come from the environment (the job sets them from the submission's ``model/model.yaml``):

- ``REXRANK_MODEL_REPO``, ``REXRANK_MODEL_REVISION`` (40 hex digits): the weights, read from the local Hugging Face
  cache only (``HF_HUB_OFFLINE=1``; ``local_files_only``, never remote code);
- ``REXRANK_TASK``: ``findings`` or ``findings_impression``;
- ``REXRANK_IMAGES``: ``multi`` (every image of the study, in its order) or ``single`` (``key_image_path``, else the
  first image);
- ``REXRANK_DEVICE`` (default ``cuda`` when available, else ``cpu``), ``REXRANK_MAX_NEW_TOKENS`` (default 256),
  ``REXRANK_SAVE_EVERY`` (default 10 studies);
- ``REXRANK_BATCH_SIZE`` (studies per ``generate``; default: fitted to the GPU's memory, with ``REXRANK_GPU_MEMORY_GB``,
  model.yaml's ``gpu_memory_gb``, as what batch 1 takes; 8 on the CPU: rexrank.inference.batching).

Two code paths (rexrank.inference.hf_models), chosen from the model's config:

- image-text-to-text (LLaVA, Gemma 3 / MedGemma, ...: any ``model_type`` of ``AutoModelForImageTextToText``):
  ``AutoProcessor`` + ``AutoModelForImageTextToText``; one user turn holding the image(s) then an instruction from
  ``PROMPTS``, through the processor's own chat template with the generation prompt;
- ``vision-encoder-decoder``: ``AutoImageProcessor`` + ``AutoTokenizer`` + ``VisionEncoderDecoderModel``,
  ``generate(pixel_values=...)``. Such a model reads one image and no prompt: in ``multi`` mode it still gets the
  single image (said on stderr), and its output is the prediction whatever the task.

Decoding is greedy (``do_sample=False``, one beam) under ``torch.inference_mode``, in batches of studies with the
same image count, longest prompt first, left-padded: each study gets the text it gets alone
(rexrank.inference.batching). The instruction text is rexrank's own prompt (``PROMPTS``, version
``PROMPT_VERSION``), written for this runner: it is not any paper's or model card's prompt, and a signature names
it by its version.

Resumable as ReXrank's own scripts are: when the save file exists, its studies that have a string
``model_prediction`` are kept and not generated again; the save file is rewritten atomically (a temporary file in
its folder, then ``os.replace``) after the batch that completes each ``REXRANK_SAVE_EVERY`` studies, and at the
end. Progress goes to stderr. Bad input (an unreadable input JSON, a missing image, a bad setting) is one line on
stderr and exit 2, before any model is loaded; a model that cannot be loaded from the cache is one line and exit 3.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass

from rexrank.inference import batching
from rexrank.inference.hf_models import ModelError, load_generator

PROMPT_VERSION = "hf-runner-v1"
PROMPTS = {
    "findings": (
        "You are given a chest X-ray study. Write the FINDINGS section of its radiology report: describe what the "
        "images show, in plain sentences. Do not write an impression, a heading or anything else."),
    "findings_impression": (
        "You are given a chest X-ray study. Write the FINDINGS and IMPRESSION sections of its radiology report, "
        "in this form:\nFindings: <what the images show, in plain sentences>\nImpression: <the conclusion>\n"
        "Do not write anything else."),
}
# Appended to the instruction when the study has them (each only where its text is non-empty / the views known).
CONTEXT_LINE = "Clinical context: {context}"
VIEWS_LINE = "Views, in the order of the images: {views}."

FIELDS = ("image_path", "key_image_path", "frontal_lateral", "context", "split")  # all this runner reads
TASKS = tuple(PROMPTS)
IMAGE_MODES = ("multi", "single")
EXIT_BAD_INPUT = 2
EXIT_NO_MODEL = 3
REVISION = re.compile(r"[0-9a-f]{40}")


class RunnerError(Exception):
    """One line for the user, and the exit status it ends the run with."""

    def __init__(self, message: str, status: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Settings:
    repo: str
    revision: str
    task: str
    images: str
    device: str | None  # None: cuda when available, else cpu (decided once torch is imported)
    max_new_tokens: int
    save_every: int
    batch_size: int | None = None  # None: chosen (rexrank.inference.batching)
    gpu_memory_gb: float | None = None  # model.yaml's: what batch 1 takes


def _positive_int(env: dict[str, str], name: str, default: int) -> int:
    text = env.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise RunnerError(f"{name}={text!r}: expected a positive whole number")
    return int(text)


def settings_from_env(env: dict[str, str] | None = None) -> Settings:
    env = dict(os.environ if env is None else env)
    repo = env.get("REXRANK_MODEL_REPO", "").strip()
    revision = env.get("REXRANK_MODEL_REVISION", "").strip().lower()
    task = env.get("REXRANK_TASK", "").strip()
    images = env.get("REXRANK_IMAGES", "").strip()
    if not repo:
        raise RunnerError("REXRANK_MODEL_REPO is not set (the model's Hub repo id, e.g. org/name)")
    if not REVISION.fullmatch(revision):
        raise RunnerError(f"REXRANK_MODEL_REVISION={revision!r}: expected the 40-hex commit of {repo}")
    if task not in TASKS:
        raise RunnerError(f"REXRANK_TASK={task!r}: expected one of {', '.join(TASKS)}")
    if images not in IMAGE_MODES:
        raise RunnerError(f"REXRANK_IMAGES={images!r}: expected one of {', '.join(IMAGE_MODES)}")
    device = env.get("REXRANK_DEVICE", "").strip() or None
    memory = env.get("REXRANK_GPU_MEMORY_GB", "").strip()
    try:
        gpu_memory_gb = float(memory) if memory else None
    except ValueError:
        raise RunnerError(f"REXRANK_GPU_MEMORY_GB={memory!r}: expected a number of GB") from None
    return Settings(repo, revision, task, images, device, _positive_int(env, "REXRANK_MAX_NEW_TOKENS", 256),
                    _positive_int(env, "REXRANK_SAVE_EVERY", 10), _positive_int(env, "REXRANK_BATCH_SIZE", 0) or None,
                    gpu_memory_gb)


# --- the input -----------------------------------------------------------------------------------------------------

def _study(study_id: str, entry) -> dict:
    """The fields of one study this runner reads, checked; nothing else of the entry is touched."""
    if not isinstance(entry, dict):
        raise RunnerError(f"study {study_id}: expected an object with image_path, got {type(entry).__name__}")
    study = {name: entry[name] for name in FIELDS if name in entry}
    paths = study.get("image_path")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p for p in paths):
        raise RunnerError(f"study {study_id}: image_path must be a non-empty list of paths")
    key = study.get("key_image_path")
    if key is not None and not isinstance(key, str):
        raise RunnerError(f"study {study_id}: key_image_path must be a path")
    views = study.get("frontal_lateral")
    if views is not None and not (isinstance(views, list) and all(isinstance(v, str) for v in views)):
        raise RunnerError(f"study {study_id}: frontal_lateral must be a list of view names")
    context = study.get("context")
    if context is not None and not isinstance(context, str):
        raise RunnerError(f"study {study_id}: context must be text")
    return study


def read_input(path: str) -> dict[str, dict]:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise RunnerError(f"input JSON {path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunnerError(f"input JSON {path} is not readable JSON ({type(err).__name__}: {err})") from None
    if not isinstance(data, dict):
        raise RunnerError(f"input JSON {path}: expected an object of studies keyed by study id, "
                          f"got {type(data).__name__}")
    if not data:
        raise RunnerError(f"input JSON {path} holds no study")
    return {str(study_id): _study(str(study_id), entry) for study_id, entry in data.items()}


def read_done(path: str) -> dict[str, str]:
    """Predictions already in the save file (a study with a string model_prediction), to keep."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise RunnerError(f"save JSON {path} exists but is not readable JSON ({type(err).__name__}): move it away "
                          f"to start over") from None
    if not isinstance(data, dict):
        raise RunnerError(f"save JSON {path} exists but is not an object of studies: move it away to start over")
    return {str(k): v["model_prediction"] for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("model_prediction"), str)}


def image_file(root: str, relative: str) -> str:
    """ReXrank joins `img_root_dir + image_path` (root with a trailing slash); this is that join, with or without
    the slash."""
    return os.path.join(root, relative.lstrip("/"))


def chosen_images(study: dict, mode: str) -> list[str]:
    """The study's image paths the model sees: all of them (multi), or the key image, else the first (single)."""
    if mode == "single":
        return [study.get("key_image_path") or study["image_path"][0]]
    return list(study["image_path"])


def views_of(study: dict, chosen: list[str]) -> list[str] | None:
    """The view name (frontal/lateral) of each chosen image, where frontal_lateral names one per image_path."""
    views = study.get("frontal_lateral")
    if not views or len(views) != len(study["image_path"]):
        return None
    by_path = dict(zip(study["image_path"], views))
    names = [by_path.get(p) for p in chosen]
    return names if all(names) else None


def instruction(study: dict, task: str, chosen: list[str]) -> str:
    """The text of the user turn: rexrank's prompt for the task, then the views and the clinical context."""
    lines = [PROMPTS[task]]
    views = views_of(study, chosen)
    if views:
        lines.append(VIEWS_LINE.format(views=", ".join(v.strip().lower() for v in views)))
    context = (study.get("context") or "").strip()
    if context:
        lines.append(CONTEXT_LINE.format(context=context))
    return "\n".join(lines)


def load_image(path: str):
    """A PIL RGB image; 16-bit and float grayscale (as DICOM-derived PNGs are) scaled to 8 bits first."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as opened:
        opened.load()
        image = opened
        if image.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
            pixels = np.asarray(image, dtype=np.float64)
            low, high = float(pixels.min()), float(pixels.max())
            scaled = (pixels - low) / (high - low) * 255 if high > low else np.zeros_like(pixels)
            image = Image.fromarray(scaled.round().astype(np.uint8), mode="L")
        return image.convert("RGB")


# --- the output ----------------------------------------------------------------------------------------------------

def write_atomically(path: str, payload: dict) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(prefix=".hf_runner-", suffix=".json", dir=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(payload, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def output(studies: dict[str, dict], predictions: dict[str, str]) -> dict[str, dict]:
    """The studies in input order, each with its prediction where it has one yet."""
    return {sid: {**study, "model_prediction": predictions[sid]} if sid in predictions else dict(study)
            for sid, study in studies.items()}


def say(message: str) -> None:
    print(f"hf_runner: {message}", file=sys.stderr, flush=True)


# --- the run -------------------------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rexrank.inference.hf_runner",
                                     description="rexrank's inference script for a transformers image-text-to-text "
                                                 "model (ReXrank's inference.py contract)")
    parser.add_argument("input_json", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("save_json", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("img_root", nargs="?", help=argparse.SUPPRESS)
    parser.add_argument("--input_json_file")
    parser.add_argument("--save_json_file")
    parser.add_argument("--img_root_dir")
    args = parser.parse_args(argv)
    for name, positional in (("input_json_file", "input_json"), ("save_json_file", "save_json"),
                             ("img_root_dir", "img_root")):
        flag, given = getattr(args, name), getattr(args, positional)
        if flag and given and flag != given:
            parser.error(f"--{name} given twice, differently")
        setattr(args, name, flag or given)
        if not getattr(args, name):
            parser.error(f"--{name} is required (or the three paths positionally)")
    return args


def pending(args: argparse.Namespace, settings: Settings) -> tuple[dict, dict, list[str]]:
    """The studies, the predictions kept from the save file, and the studies left, each image checked to exist."""
    studies = read_input(args.input_json_file)
    done = {sid: text for sid, text in read_done(args.save_json_file).items() if sid in studies}
    todo = [sid for sid in studies if sid not in done]
    if not os.path.isdir(args.img_root_dir):
        raise RunnerError(f"img_root_dir {args.img_root_dir}: no such folder")
    for sid in todo:  # every image there before a model is loaded
        for relative in chosen_images(studies[sid], settings.images):
            path = image_file(args.img_root_dir, relative)
            if not os.path.isfile(path):
                raise RunnerError(f"study {sid}: image {relative} not found (looked for {path})")
    return studies, done, todo


def study_loader(studies: dict, root: str, task: str, mode: str):
    """study id -> (its images, read, and its instruction); an unreadable image is one line naming the study."""
    def load(sid: str) -> tuple[list, str]:
        chosen = chosen_images(studies[sid], mode)
        try:
            images = [load_image(image_file(root, relative)) for relative in chosen]
        except OSError as err:
            raise RunnerError(f"study {sid}: an image could not be read ({type(err).__name__}: {err})") from None
        return images, instruction(studies[sid], task, chosen)
    return load


def plan(studies: dict, todo: list[str], task: str, mode: str) -> tuple[list[str], dict[str, int]]:
    """The order studies are generated in (rexrank.inference.batching.ordered) and each one's image count."""
    chosen = {sid: chosen_images(studies[sid], mode) for sid in todo}
    counts = {sid: len(paths) for sid, paths in chosen.items()}
    lengths = {sid: len(instruction(studies[sid], task, chosen[sid])) for sid in todo}
    return batching.ordered({sid: (counts[sid], lengths[sid]) for sid in todo}), counts


def run(args: argparse.Namespace, settings: Settings) -> int:
    studies, done, todo = pending(args, settings)
    noun = "study" if len(todo) == 1 else "studies"
    say(f"{len(todo)} {noun} to generate, {len(done)} kept from {args.save_json_file}")
    predictions = dict(done)
    if not todo:
        write_atomically(args.save_json_file, output(studies, predictions))
        return 0

    try:
        generator, device, dtype = load_generator(settings.repo, settings.revision, settings.device,
                                                  settings.max_new_tokens)
    except ModelError as err:
        raise RunnerError(str(err), EXIT_NO_MODEL) from None
    mode = settings.images if generator.reads_prompt else "single"
    load = study_loader(studies, args.img_root_dir, settings.task, mode)
    order, counts = plan(studies, todo, settings.task, mode)
    size = batching.batch_size(settings.batch_size, device, lambda: generator.study_bytes(*load(order[0])),
                               settings.gpu_memory_gb)
    say(f"{settings.repo}@{settings.revision[:12]} ({generator.kind}), task {settings.task}, images "
        f"{settings.images}, {device}, {dtype}, greedy, max_new_tokens {settings.max_new_tokens}, batches of up to "
        f"{size}" + (f", prompt {PROMPT_VERSION}" if generator.reads_prompt else ", no prompt"))
    if not generator.reads_prompt and settings.images == "multi":
        say("a vision-encoder-decoder model reads one image: each study's key image (else its first) is used")
    started, saved = time.monotonic(), [0]

    def finished(batch: list[str], results: list[tuple[str, int]], seconds: float) -> None:
        for sid, (text, tokens) in zip(batch, results, strict=True):
            predictions[sid] = text
            n = len(predictions) - len(done)
            say(f"[{n}/{len(todo)}] {sid}: {counts[sid]} image{'s' if counts[sid] != 1 else ''}, {tokens} tokens, "
                f"batch of {len(batch)} in {seconds:.2f} s")
        if n - saved[0] >= settings.save_every and n < len(todo):
            write_atomically(args.save_json_file, output(studies, predictions))
            saved[0] = n

    batching.generate(lambda batch: generator.generate_batch([load(sid) for sid in batch]), order, counts, size,
                      finished, say)
    write_atomically(args.save_json_file, output(studies, predictions))
    say(f"done: {len(todo)} generated in {time.monotonic() - started:.1f} s, {len(studies)} studies in "
        f"{args.save_json_file}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args, settings_from_env())
    except RunnerError as err:
        print(f"hf_runner: error: {err}", file=sys.stderr, flush=True)
        return err.status


if __name__ == "__main__":
    sys.exit(main())
