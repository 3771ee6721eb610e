"""A code submission on a GPU inside the sandbox: the GPU passed through (its device nodes, CUDA_VISIBLE_DEVICES),
the tiny Gemma 3 stand-in of google/medgemma-4b-it run by rexrank's runner on CUDA, and the time per study.

    python benchmarks/sandbox_gpu.py [--studies 32] [--model-cache DIR --repo ORG/NAME --revision COMMIT]

Without --model-cache it builds the stand-in (tests/fixtures/vision_models.py) into a fresh Hub cache; with it, it
runs a real model already in that cache (a 2-billion-parameter-class one, where one can be had: the device machine
has no network). Prints the device the runner used and seconds per study; needs Debian's bubblewrap and a GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--studies", type=int, default=32)
    parser.add_argument("--model-cache")
    parser.add_argument("--repo")
    parser.add_argument("--revision")
    args = parser.parse_args()

    from fixtures.vision_models import MEDGEMMA, build_tiny_gemma3, fill_cache, synthetic_pngs

    from rexrank.inference.runner import infer

    with tempfile.TemporaryDirectory(prefix="rexrank-sandbox-gpu-") as tmp:
        root = Path(tmp)
        if args.model_cache:
            cache, repo, revision = Path(args.model_cache), args.repo, args.revision
        else:
            cache = fill_cache(root / "hf", {MEDGEMMA.key: build_tiny_gemma3(root / "medgemma")})
            repo, revision = MEDGEMMA.repo_id, MEDGEMMA.revision
        studies = [f"study{i:04d}" for i in range(args.studies)]
        paths = synthetic_pngs(root / "images", studies, views=1, size=256)
        (root / "split.jsonl").write_text("".join(json.dumps({"study_id": s, "findings": "Synthetic.",
                                                              "impression": "None.", "image_paths": paths[s]}) + "\n"
                                                  for s in studies))
        model = root / "model"
        model.mkdir()
        (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": repo, "revision": revision}],
                                                      "tasks": ["findings"], "images": "single",
                                                      "gpu_memory_gb": 16, "runner": "transformers"}))
        done = infer(model, root / "split.jsonl", root / "images", root / "preds.jsonl", weights_cache=cache, gpus=1)
        log = done.logs[0].read_text()
        device = next((line for line in log.splitlines() if ", greedy," in line), "the runner said nothing")
        print(f"{done.studies} studies in {done.seconds:.1f} s: {done.seconds / done.studies:.3f} s a study, "
              f"sandbox included; {device}")


if __name__ == "__main__":
    main()
