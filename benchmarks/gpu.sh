#!/usr/bin/env bash
# benchmarks/gpu.py on one GPU, in two calls of the device tool (each under 8 minutes; the packages of the two halves
# do not fit in one call's 64 MiB). Prepare the wheels here first: benchmarks/gpu_wheels.sh. Then:
#   run(command="bash benchmarks/gpu.sh ours",  carry=[".whl"],       timeout_s=480)  rexrank fp32/bf16/fp16, bert-score
#   run(command="bash benchmarks/gpu.sh peers", carry=[".whl-peers"], timeout_s=480)  f1chexbert, radgraph, ratescore
# The second call, on the still-warm machine, reuses the models the first built (/tmp/rexrank-gpu). Numbers go to
# $OUT/gpu-<half>.json and the log to $OUT/gpu-<half>.log.
set -euo pipefail
half=${1:-ours}
out=${OUT:-/tmp}
wheels=$([ "$half" = peers ] && echo .whl-peers || echo .whl)
site=/tmp/site-$half
[ -d "$site" ] || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl
nvidia-smi --query-gpu=name,memory.total,memory.free,driver_version --format=csv
mkdir -p /tmp/rexrank-gpu
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
if [ "$half" = peers ]; then
  printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$site" > /tmp/peer-python && chmod +x /tmp/peer-python
  export PYTHONPATH=$PWD/src
  extra=(--peer-python /tmp/peer-python)
else
  export PYTHONPATH=$PWD/src:$site
  extra=()
fi
timeout 450 python3 benchmarks/gpu.py --device cuda --only "$half" --work /tmp/rexrank-gpu --json "$out/gpu-$half.json" \
  "${extra[@]}" 2>&1 | grep -v -e "Loading weights" -e "Writing model" | tee "$out/gpu-$half.log"
