#!/usr/bin/env bash
# benchmarks/private_run.py on one GPU (the device tool), MedGemma 4B's shape with random bf16 weights:
#   run(command="bash benchmarks/private_run_gpu.sh", timeout_s=480)
# It needs only what the machine's image holds (torch, transformers 5, Pillow). vLLM cannot be installed there (no
# registry): the script says whether the image has it; the vLLM row needs the job image (leaderboard_sync/job).
# Numbers go to $OUT/private_run.json and the log to $OUT/private_run.log.
set -euo pipefail
out=${OUT:-/tmp}
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -c "import vllm; print('vLLM', vllm.__version__)" 2>/dev/null || echo "no vLLM on this machine"
timeout 450 python3 benchmarks/private_run.py --device cuda --real-size --studies 24 --max-new-tokens 256 \
  --repeats 1 --json "$out/private_run.json" 2>&1 | grep -v -e "Loading weights" -e "Writing model" \
  | tee "$out/private_run.log"
