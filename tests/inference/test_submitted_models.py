"""Real (tiny) models run as code submissions in the sandbox, as the maintainers run them: a transformers
image-text-to-text model named by its repo only (rexrank's runner is its script: the stand-in of
google/medgemma-4b-it, Gemma 3), and a submitter's own ReXrank script in round 1's positional form loading a
VisionEncoderDecoder from the pinned weights' path (the stand-in of IAMJB/chexpert-mimic-cxr-findings-baseline);
synthetic PNGs, offline, no GPU."""

import json
import shutil
import textwrap

import pytest
from fixtures.vision_models import (
    CHEXPERT_FINDINGS_BASELINE,
    MEDGEMMA,
    build_tiny_gemma3,
    build_tiny_vision_encoder_decoder,
    fill_cache,
    synthetic_pngs,
)

from rexrank.inference.runner import infer

pytestmark = [
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed (.ci/run installs it)"),
    pytest.mark.subprocess, pytest.mark.slow,  # each test runs a submitted model in the sandbox (bwrap)
]

STUDIES = ["p1_s1", "p2_s4", "p3_s2"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return fill_cache(tmp_path_factory.mktemp("hf_home"), {
        MEDGEMMA.key: build_tiny_gemma3(tmp_path_factory.mktemp("medgemma")),
        CHEXPERT_FINDINGS_BASELINE.key: build_tiny_vision_encoder_decoder(tmp_path_factory.mktemp("ved"))})


@pytest.fixture
def split(tmp_path):
    images = tmp_path / "images"
    paths = synthetic_pngs(images, STUDIES, views=2)
    source = tmp_path / "split.jsonl"
    source.write_text("".join(json.dumps({"study_id": s, "findings": f"Synthetic findings {i}.",
                                          "impression": "Synthetic impression.", "image_paths": paths[s],
                                          "views": ["PA", "LATERAL"], "context": "Indication: cough."}) + "\n"
                              for i, s in enumerate(STUDIES)))
    return source, images


def card(spec, **fields) -> str:
    return json.dumps({"weights": [{"repo": spec.repo_id, "revision": spec.revision}], "gpu_memory_gb": 16} | fields)


def test_a_standard_transformers_model_named_by_its_repo_runs_with_rexranks_runner(tmp_path, cache, split):
    model = tmp_path / "submission" / "model"
    model.mkdir(parents=True)
    (model / "model.yaml").write_text(card(MEDGEMMA, runner="transformers", images="single",
                                           tasks=["findings", "findings_impression"]))
    source, images = split
    for task in ("findings", "findings_impression"):
        done = infer(model, source, images, tmp_path / f"{task}.jsonl", task=task, weights_cache=cache)
        rows = [json.loads(line) for line in (tmp_path / f"{task}.jsonl").read_text().splitlines()]
        assert [r["study_id"] for r in rows] == STUDIES and all(isinstance(r["prediction"], str) for r in rows)
        assert done.studies == 3 and done.task == task
        log = done.logs[0].read_text()
        assert "hf_runner: 3 studies to generate" in log and "1 image" in log  # single: the key image only


def test_a_submitters_own_script_in_the_positional_form_loads_its_weights_from_their_pinned_path(tmp_path, cache,
                                                                                                 split):
    model = tmp_path / "submission" / "model"
    model.mkdir(parents=True)
    (model / "model.yaml").write_text(card(CHEXPERT_FINDINGS_BASELINE, tasks=["findings"], images="single"))
    (model / "requirements.txt").write_text("torch\ntransformers\n")
    (model / "inference.py").write_text(textwrap.dedent(f"""
        import json, sys
        import torch
        from PIL import Image
        from transformers import AutoImageProcessor, AutoTokenizer, VisionEncoderDecoderModel

        input_json, save_json, root = sys.argv[1:4]  # ReXrank round 1: python inference.py IN OUT ROOT
        weights = "/weights/{CHEXPERT_FINDINGS_BASELINE.repo_id}"
        model = VisionEncoderDecoderModel.from_pretrained(weights).eval()
        processor, tokenizer = AutoImageProcessor.from_pretrained(weights), AutoTokenizer.from_pretrained(weights)
        data = json.load(open(input_json))
        for study, record in data.items():
            image = Image.open(root + record["key_image_path"]).convert("RGB")
            with torch.inference_mode():
                ids = model.generate(pixel_values=processor(image, return_tensors="pt").pixel_values,
                                     max_new_tokens=5, do_sample=False,
                                     decoder_start_token_id=tokenizer.cls_token_id)
            record["model_prediction"] = tokenizer.decode(ids[0], skip_special_tokens=True)
        json.dump(data, open(save_json, "w"))
    """))
    source, images = split
    done = infer(model, source, images, tmp_path / "preds.jsonl", weights_cache=cache)
    rows = [json.loads(line) for line in (tmp_path / "preds.jsonl").read_text().splitlines()]
    assert done.model.cli == "positional" and [r["study_id"] for r in rows] == STUDIES
    assert all(isinstance(r["prediction"], str) for r in rows)
