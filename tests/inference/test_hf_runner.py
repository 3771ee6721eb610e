"""rexrank's own inference script (`python -m rexrank.inference.hf_runner`), run as a real subprocess under
ReXrank's contract, offline, on the stand-ins of google/medgemma-4b-it (Gemma 3 image-text-to-text) and
IAMJB/chexpert-mimic-cxr-findings-baseline (VisionEncoderDecoder), served at their pins from a Hugging Face cache
that the loopback fake Hub filled, on synthetic PNGs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.vision_models import (
    CHEXPERT_FINDINGS_BASELINE,
    MEDGEMMA,
    build_tiny_gemma3,
    build_tiny_vision_encoder_decoder,
    fill_cache,
    synthetic_pngs,
)

from rexrank.inference import hf_models, hf_runner

STUDIES = ["pat01_study1", "pat02_study7", "pat03_study2", "pat04_study5"]
SPECS = {"gemma3": MEDGEMMA, "ved": CHEXPERT_FINDINGS_BASELINE}


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory) -> dict[str, Path]:
    return {"gemma3": build_tiny_gemma3(tmp_path_factory.mktemp("medgemma-4b-it")),
            "ved": build_tiny_vision_encoder_decoder(tmp_path_factory.mktemp("chexpert-findings"))}


@pytest.fixture(scope="module")
def hf_cache(stand_ins, tmp_path_factory) -> Path:
    """A Hugging Face cache holding both stand-ins at their real pins, filled once from the (fake) Hub by
    `snapshot_download`; the runner then reads it offline."""
    return fill_cache(tmp_path_factory.mktemp("hf_home"), {SPECS[name].key: folder for name, folder in
                                                            stand_ins.items()})


@pytest.fixture
def study_set(tmp_path) -> tuple[Path, Path]:
    """An input JSON of four synthetic studies (two views each; one names its lateral as the key image, one has no
    key image and no context) and the image root; the third study carries a field the runner must not read."""
    root = tmp_path / "images"
    paths = synthetic_pngs(root, STUDIES, views=2)
    studies = {}
    for n, sid in enumerate(STUDIES):
        studies[sid] = {"image_path": paths[sid], "key_image_path": paths[sid][1] if n == 1 else
                        ("" if n == 3 else paths[sid][0]), "frontal_lateral": ["Frontal", "Lateral"],
                        "context": "" if n == 3 else f"Synthetic indication {n}: cough.", "split": "test"}
    studies[STUDIES[2]]["not_for_the_model"] = "SYNTHETIC-REFERENCE-TEXT"
    source = tmp_path / "input.json"
    source.write_text(json.dumps(studies, indent=2))
    return source, root


def runner_env(hf_cache: Path, model: str, task: str, images: str, **extra: str) -> dict[str, str]:
    """The runner's environment: this one's less any HF_ or REXRANK_ setting, then the run's own."""
    spec = SPECS[model]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "REXRANK_"))}
    env.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(hf_cache), HF_HOME=str(hf_cache.parent),
               HF_ENDPOINT="http://127.0.0.1:9",  # nothing listens: any request would fail, none is made
               REXRANK_MODEL_REPO=spec.repo_id, REXRANK_MODEL_REVISION=spec.revision, REXRANK_TASK=task,
               REXRANK_IMAGES=images, REXRANK_MAX_NEW_TOKENS="6", REXRANK_DEVICE="cpu")
    env.update(extra)
    return env


def run(hf_cache: Path, model: str, task: str, images: str, source: Path, root: Path, save: Path,
        positional: bool = False, **extra: str) -> subprocess.CompletedProcess:
    env = runner_env(hf_cache, model, task, images, **extra)
    paths = [str(source), str(save), f"{root}/"]  # img_root_dir with its trailing slash, as ReXrank passes it
    args = paths if positional else [a for flag, p in zip(("--input_json_file", "--save_json_file",
                                                            "--img_root_dir"), paths) for a in (flag, p)]
    return subprocess.run([sys.executable, "-m", "rexrank.inference.hf_runner", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("hf_runner:")]


@pytest.mark.parametrize("model, task, images, positional", [
    ("gemma3", "findings", "multi", False),
    ("gemma3", "findings_impression", "single", True),
    ("ved", "findings", "single", False),
    ("ved", "findings_impression", "multi", True),
])
def test_every_study_gets_a_prediction_and_keeps_its_fields(hf_cache, study_set, tmp_path, model, task, images,
                                                             positional):
    source, root = study_set
    save = tmp_path / "out" / "predictions.json"
    save.parent.mkdir()
    done = run(hf_cache, model, task, images, source, root, save, positional=positional)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    given = json.loads(source.read_text())
    out = json.loads(save.read_text())
    assert list(out) == STUDIES  # input order, nothing sorted
    for sid in STUDIES:
        entry = dict(out[sid])
        assert isinstance(entry.pop("model_prediction"), str)
        assert entry == {k: v for k, v in given[sid].items() if k in hf_runner.FIELDS}
    assert "not_for_the_model" not in out[STUDIES[2]]  # a field the runner does not read is not copied either
    assert not [p for p in save.parent.iterdir() if p.name != save.name]  # no temporary file left behind
    log = lines(done.stderr)
    assert log[0] == f"hf_runner: 4 studies to generate, 0 kept from {save}"
    kind = "image-text-to-text" if model == "gemma3" else "vision-encoder-decoder"
    assert f"{SPECS[model].pinned} ({kind}), task {task}, images {images}, cpu, float32" in log[1]
    assert log[1].endswith(f"prompt {hf_runner.PROMPT_VERSION}" if model == "gemma3" else "no prompt")
    seen = 2 if (model, images) == ("gemma3", "multi") else 1
    per_study = [line for line in log if "] pat" in line]
    assert len(per_study) == 4 and all(f": {seen} image{'s' if seen > 1 else ''}, " in line for line in per_study)
    if model == "ved" and images == "multi":
        assert any("reads one image" in line for line in log)


def test_a_rerun_generates_only_the_missing_prediction(hf_cache, study_set, tmp_path):
    source, root = study_set
    save = tmp_path / "predictions.json"
    first = run(hf_cache, "gemma3", "findings", "multi", source, root, save)
    assert first.returncode == 0, first.stderr
    before = json.loads(save.read_text())
    edited = json.loads(save.read_text())
    del edited[STUDIES[1]]["model_prediction"]  # as if the run had stopped before this study
    edited[STUDIES[3]]["model_prediction"] = "KEPT AS IT IS"  # what is in the save file wins
    save.write_text(json.dumps(edited, indent=2))

    second = run(hf_cache, "gemma3", "findings", "multi", source, root, save)
    assert second.returncode == 0, second.stderr
    log = lines(second.stderr)
    assert log[0] == f"hf_runner: 1 study to generate, 3 kept from {save}"
    assert [line.split("] ")[1].split(":")[0] for line in log if "] pat" in line] == [STUDIES[1]]
    after = json.loads(save.read_text())
    assert list(after) == STUDIES
    for sid in (STUDIES[0], STUDIES[2]):
        assert json.dumps(after[sid]) == json.dumps(before[sid])
    assert after[STUDIES[3]]["model_prediction"] == "KEPT AS IT IS"
    # Greedy decoding with the same weights, inputs and CPU in one process shape (batch 1): the same text again.
    assert after[STUDIES[1]]["model_prediction"] == before[STUDIES[1]]["model_prediction"]

    third = run(hf_cache, "gemma3", "findings", "multi", source, root, save)
    assert third.returncode == 0, third.stderr
    assert lines(third.stderr) == [f"hf_runner: 0 studies to generate, 4 kept from {save}"]  # no model loaded
    assert json.loads(save.read_text()) == after


@pytest.mark.parametrize("model", ["gemma3", "ved"])
def test_batched_generation_gives_every_study_the_text_it_gets_alone(hf_cache, tmp_path, model):
    """Nine studies of one, two and three images, with contexts of different lengths: batches of up to 8 (each of one
    image count, left-padded) give every study byte for byte its batch-1 text."""
    ids = [f"pat{n:02d}_study{n}" for n in range(9)]
    root = tmp_path / "images"
    paths = synthetic_pngs(root, ids, views=3)
    studies = {sid: {"image_path": paths[sid][:1 + n % 3], "context": "Synthetic indication: cough. " * (n % 4),
                     "split": "test"} for n, sid in enumerate(ids)}
    source = tmp_path / "input.json"
    source.write_text(json.dumps(studies))
    texts, logs = {}, {}
    for size in ("1", "8"):
        save = tmp_path / f"batch{size}.json"
        done = run(hf_cache, model, "findings", "multi", source, root, save, REXRANK_MAX_NEW_TOKENS="24",
                   REXRANK_BATCH_SIZE=size)
        assert done.returncode == 0, done.stderr
        texts[size] = {sid: v["model_prediction"] for sid, v in json.loads(save.read_text()).items()}
        logs[size] = [line for line in lines(done.stderr) if "] pat" in line]
    assert list(texts["8"]) == ids and texts["8"] == texts["1"]
    assert len({t for t in texts["1"].values()}) > 1  # the studies' texts differ: the comparison can fail
    assert all("batch of 1 in" in line for line in logs["1"])
    largest = max(int(line.split("batch of ")[1].split()[0]) for line in logs["8"])
    if model == "gemma3":  # three image counts: batches of 3 (each count holds three studies)
        assert largest == 3 and {line.split(": ")[2].split(",")[0] for line in logs["8"]} == \
            {"1 image", "2 images", "3 images"}
    else:  # one image each: batches of 8, then 1
        assert largest == 8


def test_a_missing_image_is_one_line_naming_study_and_path(hf_cache, study_set, tmp_path):
    source, root = study_set
    gone = json.loads(source.read_text())[STUDIES[2]]["image_path"][1]
    (root / gone).unlink()
    save = tmp_path / "predictions.json"
    done = run(hf_cache, "gemma3", "findings", "multi", source, root, save)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"hf_runner: error: study {STUDIES[2]}: image {gone} not found (looked for {root}/{gone})"]
    assert not save.exists()
    # Said before torch is imported (seconds on a laptop, a GPU job's startup on the Hub): the runner in-process
    probe = ("import sys; from rexrank.inference import hf_runner; "
             f"code = hf_runner.main(['--input_json_file', {str(source)!r}, '--save_json_file', {str(save)!r}, "
             f"'--img_root_dir', {str(root)!r}]); print(code, 'torch' in sys.modules)")
    probed = subprocess.run([sys.executable, "-c", probe], env=runner_env(hf_cache, "gemma3", "findings", "multi"),
                            capture_output=True, text=True, timeout=60)
    assert probed.stdout.split() == ["2", "False"], probed.stderr
    # In single mode the lateral is not read for that study (its key image is the frontal): no error.
    single = run(hf_cache, "ved", "findings", "single", source, root, save)
    assert single.returncode == 0, single.stderr


@pytest.mark.parametrize("content, says", [
    ('{"pat01_study1": {"image_path": ["a.png"]', "is not readable JSON (JSONDecodeError"),
    ('[{"image_path": ["a.png"]}]', "expected an object of studies keyed by study id, got list"),
    ('{"pat01_study1": {"image_path": "a.png"}}', "study pat01_study1: image_path must be a non-empty list"),
    (b"\xff\xfe{", "is not readable JSON (UnicodeDecodeError"),
    (None, "no such file"),
])
def test_an_unreadable_input_json_is_one_line(hf_cache, study_set, tmp_path, content, says):
    _, root = study_set
    source = tmp_path / "broken.json"
    if isinstance(content, bytes):
        source.write_bytes(content)
    elif content is not None:
        source.write_text(content)
    done = run(hf_cache, "gemma3", "findings", "single", source, root, tmp_path / "predictions.json")
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("hf_runner: error: ") and says in line


def test_a_model_not_in_the_cache_is_one_line_and_exit_3(hf_cache, study_set, tmp_path):
    source, root = study_set
    revision = "0" * 40
    done = run(hf_cache, "gemma3", "findings", "single", source, root, tmp_path / "p.json",
               REXRANK_MODEL_REVISION=revision)
    assert done.returncode == 3
    assert done.stderr.strip().splitlines()[-1].startswith(
        f"hf_runner: error: google/medgemma-4b-it@{revision[:12]} cannot be loaded from the local Hugging Face cache")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("env, says", [
    ({"REXRANK_TASK": "impression"}, "REXRANK_TASK='impression': expected one of findings, findings_impression"),
    ({"REXRANK_IMAGES": "all"}, "REXRANK_IMAGES='all': expected one of multi, single"),
    ({"REXRANK_MODEL_REVISION": "main"}, "REXRANK_MODEL_REVISION='main': expected the 40-hex commit"),
    ({"REXRANK_MAX_NEW_TOKENS": "0"}, "REXRANK_MAX_NEW_TOKENS='0': expected a positive whole number"),
])
def test_a_bad_setting_is_one_line(hf_cache, study_set, tmp_path, env, says):
    source, root = study_set
    done = run(hf_cache, "gemma3", "findings", "single", source, root, tmp_path / "p.json", **env)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert says in line


# --- in-process: the pieces the subprocess runs cannot show ---------------------------------------------------------

@pytest.mark.slow
def test_the_stand_ins_carry_their_real_repositories_files_and_generate_offline(stand_ins):
    import time

    import torch
    from PIL import Image
    from transformers import (
        AutoImageProcessor,
        AutoModelForImageTextToText,
        AutoProcessor,
        AutoTokenizer,
        VisionEncoderDecoderModel,
    )

    for name, spec in SPECS.items():
        folder = stand_ins[name]
        assert sorted(p.name for p in folder.iterdir()) == sorted(spec.manifest)
        assert len(spec.revision) == 40 and int(spec.revision, 16) >= 0
        for unread in spec.placeholders:
            assert (folder / unread).read_bytes().startswith(b"stand-in for ")
    assert not (stand_ins["ved"] / "tokenizer.json").exists()  # the real one ships vocab.txt only
    assert set(MEDGEMMA.placeholders) == {".gitattributes", "README.md", "tokenizer.model"}
    image = Image.new("L", (40, 52), 90).convert("RGB")

    processor = AutoProcessor.from_pretrained(stand_ins["gemma3"])
    model = AutoModelForImageTextToText.from_pretrained(stand_ins["gemma3"])
    inputs = processor.apply_chat_template(hf_models.messages([image, image], "Write the findings."),
                                           add_generation_prompt=True, tokenize=True, return_dict=True,
                                           return_tensors="pt")
    assert inputs["pixel_values"].shape == (2, 3, 32, 32)  # both views, at the preprocessor_config's size
    text = processor.tokenizer.decode(inputs["input_ids"][0])
    assert text.count("<start_of_image>") == 2 and text.endswith("<start_of_turn>model\n")
    started = time.perf_counter()
    with torch.inference_mode():
        out = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert out.shape[1] == inputs["input_ids"].shape[1] + 5 and time.perf_counter() - started < 1.0

    tokenizer = AutoTokenizer.from_pretrained(stand_ins["ved"])  # built from vocab.txt, as transformers does
    assert tokenizer.tokenize("The lungs are clear.") == ["the", "lungs", "are", "clear", "."]
    pixels = AutoImageProcessor.from_pretrained(stand_ins["ved"])(images=image, return_tensors="pt")["pixel_values"]
    ved = VisionEncoderDecoderModel.from_pretrained(stand_ins["ved"])
    started = time.perf_counter()
    with torch.inference_mode():
        out = ved.generate(pixel_values=pixels, max_new_tokens=5, do_sample=False)
    assert out.shape[1] == 6 and time.perf_counter() - started < 1.0


def test_which_images_the_model_sees():
    study = {"image_path": ["s/frontal.png", "s/lateral.png"], "key_image_path": "s/lateral.png",
             "frontal_lateral": ["Frontal", "Lateral"]}
    assert hf_runner.chosen_images(study, "multi") == ["s/frontal.png", "s/lateral.png"]
    assert hf_runner.chosen_images(study, "single") == ["s/lateral.png"]
    assert hf_runner.chosen_images({**study, "key_image_path": ""}, "single") == ["s/frontal.png"]
    assert hf_runner.chosen_images({"image_path": ["only.png"]}, "single") == ["only.png"]
    assert hf_runner.image_file("/data/img/", "s/a.png") == hf_runner.image_file("/data/img", "s/a.png") == \
        "/data/img/s/a.png"


def test_the_instruction_names_the_sections_views_and_context():
    study = {"image_path": ["a.png", "b.png"], "frontal_lateral": ["Frontal", "Lateral"],
             "context": " Synthetic indication: fever. "}
    findings = hf_runner.instruction(study, "findings", ["a.png", "b.png"])
    both = hf_runner.instruction(study, "findings_impression", ["b.png"])
    assert findings.startswith(hf_runner.PROMPTS["findings"]) and "IMPRESSION" not in findings.split("Do not")[0]
    assert "FINDINGS and IMPRESSION" in both and "Impression:" in both
    assert "Views, in the order of the images: frontal, lateral." in findings
    assert "Views, in the order of the images: lateral." in both
    assert findings.endswith("Clinical context: Synthetic indication: fever.")
    bare = hf_runner.instruction({"image_path": ["a.png"], "context": ""}, "findings", ["a.png"])
    assert bare == hf_runner.PROMPTS["findings"]  # no views known, no context: the prompt alone


def test_only_the_contract_fields_are_read(tmp_path):
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"s1": {"image_path": ["a.png"], "split": "test", "report": "SYNTHETIC"}}))
    assert hf_runner.read_input(str(source)) == {"s1": {"image_path": ["a.png"], "split": "test"}}


def test_a_run_that_stops_leaves_its_checkpoint_and_resumes_from_it(study_set, tmp_path, monkeypatch):
    """The checkpoint logic, with the model replaced by a generator whose second batch fails (the model is not what
    this test is about: the subprocess tests run the real one)."""
    source, root = study_set
    save = tmp_path / "predictions.json"
    outcomes = iter([["first", "second"], KeyboardInterrupt, ["third", "fourth"]])  # killed in the 2nd batch
    batches = []

    class Failing:
        kind, reads_prompt = "test", True

        def generate_batch(self, studies):
            batches.append(len(studies))
            outcome = next(outcomes)
            if outcome is KeyboardInterrupt:
                raise KeyboardInterrupt
            return [(text, 2) for text in outcome]

    monkeypatch.setattr(hf_runner, "load_generator", lambda *args: (Failing(), "cpu", "float32"))
    monkeypatch.setenv("REXRANK_MODEL_REPO", "org/model")
    monkeypatch.setenv("REXRANK_MODEL_REVISION", "a" * 40)
    monkeypatch.setenv("REXRANK_TASK", "findings")
    monkeypatch.setenv("REXRANK_IMAGES", "multi")
    monkeypatch.setenv("REXRANK_SAVE_EVERY", "1")
    monkeypatch.setenv("REXRANK_BATCH_SIZE", "2")
    args = ["--input_json_file", str(source), "--save_json_file", str(save), "--img_root_dir", f"{root}/"]
    with pytest.raises(KeyboardInterrupt):
        hf_runner.main(args)
    partial = json.loads(save.read_text())  # checkpointed after the first batch: its two studies are there
    # Longest prompt first: the 4th study has no context, so it comes last; the others keep their input order.
    assert [partial[sid].get("model_prediction") for sid in STUDIES] == ["first", "second", None, None]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".hf_runner-")] == []
    assert hf_runner.main(args) == 0
    assert [json.loads(save.read_text())[sid]["model_prediction"] for sid in STUDIES] == \
        ["first", "second", "third", "fourth"]
    assert batches == [2, 2, 2]


def test_a_sixteen_bit_png_is_scaled_to_eight_bits(tmp_path):
    import numpy as np
    from PIL import Image

    pixels = np.linspace(1000, 4000, 64, dtype=np.uint16).reshape(8, 8)
    Image.fromarray(pixels).save(tmp_path / "deep.png")
    assert Image.open(tmp_path / "deep.png").mode.startswith("I")
    image = hf_runner.load_image(str(tmp_path / "deep.png"))
    values = np.asarray(image)
    assert image.mode == "RGB" and values.min() == 0 and values.max() == 255  # not clipped to white
