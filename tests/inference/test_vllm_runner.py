"""rexrank's vLLM runner (`runner: vllm`) where vLLM cannot run (it needs CUDA): the prompts it hands vLLM are the
transformers runner's, its outputs go back to their studies, and without vLLM it stops with one line. The stand-in of
google/medgemma-4b-it (tests/fixtures/vision_models.py) gives the processor and chat template."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass

import pytest
from fixtures.vision_models import build_tiny_gemma3, synthetic_pngs

from rexrank.inference import hf_runner, vllm_runner
from rexrank.inference.contract import read_card
from rexrank.inference.hf_models import messages


@pytest.fixture(scope="module")
def gemma3(tmp_path_factory):
    return build_tiny_gemma3(tmp_path_factory.mktemp("medgemma-4b-it"))


@pytest.mark.slow
def test_each_prompt_is_the_transformers_runner_s_with_its_images(gemma3, tmp_path):
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(gemma3)
    paths = synthetic_pngs(tmp_path, ["s1", "s2"], views=2)
    studies = [([hf_runner.load_image(str(tmp_path / p)) for p in paths["s1"]], "Write the findings."),
               ([hf_runner.load_image(str(tmp_path / paths["s2"][0]))], "Write both sections.\nClinical context: x")]
    built = vllm_runner.requests(processor, studies)
    assert [len(r["multi_modal_data"]["image"]) for r in built] == [2, 1]
    for request, (images, text) in zip(built, studies):
        assert request["multi_modal_data"]["image"] == images and request["prompt"].count("<start_of_image>") == \
            len(images)
        # What vLLM's processing of the prompt and images gives (the model's own processor) is what the transformers
        # runner generates from: the same tokens, the images' soft tokens included.
        ours = processor(text=[request["prompt"]], images=[images], return_tensors="pt")
        theirs = processor.apply_chat_template(messages(images, text), add_generation_prompt=True, tokenize=True,
                                               return_dict=True, return_tensors="pt")
        assert ours["input_ids"].tolist() == theirs["input_ids"].tolist()
        assert (ours["pixel_values"] == theirs["pixel_values"]).all()


@dataclass
class Completion:
    text: str
    token_ids: list[int]


@dataclass
class RequestOutput:
    outputs: list[Completion]


def test_outputs_go_back_to_their_studies_in_order():
    outputs = [RequestOutput([Completion(" No effusion.\n", [5, 6, 7])]), RequestOutput([Completion("Clear.", [9])])]
    assert vllm_runner.results(outputs) == [("No effusion.", 3), ("Clear.", 1)]


def test_an_architecture_vllm_does_not_serve_is_refused():
    assert vllm_runner.served(["Gemma3ForConditionalGeneration"], {"Gemma3ForConditionalGeneration", "X"}) == \
        "Gemma3ForConditionalGeneration"
    with pytest.raises(hf_runner.RunnerError, match="vLLM does not serve VisionEncoderDecoderModel") as refused:
        vllm_runner.served(["VisionEncoderDecoderModel"], {"Gemma3ForConditionalGeneration"})
    assert refused.value.status == hf_runner.EXIT_NO_MODEL


def test_runner_vllm_needs_no_script_and_runs_rexrank_s_vllm_runner(tmp_path):
    card = {"weights": [{"repo": "org/model", "revision": "a" * 40}], "tasks": ["findings"], "gpu_memory_gb": 24,
            "runner": "vllm"}
    model = read_card(json.dumps(card).encode(), tmp_path)
    assert model.uses_rexrank_runner
    assert model.command("/input/i.json", "/output/o.json", "/images/")[:3] == \
        ["python", "-m", "rexrank.inference.vllm_runner"]


@pytest.mark.subprocess
@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_run_stops_with_one_line_before_reading_an_image(tmp_path):
    source = tmp_path / "input.json"
    source.write_text(json.dumps({"s1": {"image_path": ["missing.png"]}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "REXRANK_"))}
    env.update(HF_HUB_OFFLINE="1", REXRANK_MODEL_REPO="google/medgemma-4b-it", REXRANK_MODEL_REVISION="a" * 40,
               REXRANK_TASK="findings", REXRANK_IMAGES="multi")
    done = subprocess.run([sys.executable, "-m", "rexrank.inference.vllm_runner", "--input_json_file", str(source),
                           "--save_json_file", str(tmp_path / "out.json"), "--img_root_dir", f"{tmp_path}/"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == hf_runner.EXIT_NO_MODEL
    assert done.stderr.strip().splitlines() == [f"vllm_runner: error: {vllm_runner.MISSING}"]
    assert not (tmp_path / "out.json").exists()
