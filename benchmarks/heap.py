"""Why rexrank fixes glibc's mmap threshold: resident memory after GELU (the one op of the encoders here that runs
through oneDNN, which keeps a compiled primitive per tensor shape) on a batch of every padded length from 20 to
418 tokens, twice, each way in a fresh process: as glibc and oneDNN come, with rexrank's fixed threshold
(`rexrank.models.runtime.map_large_blocks`), and with oneDNN's primitive cache off instead.

    python benchmarks/heap.py

A long scoring run meets its batches in hundreds of shapes. By default glibc raises its mmap threshold to each
large block freed, so the batches' tensors come from the heap, among the cached primitives that live on, and the
heap cannot give back what those pin: the resident set grows in the second pass over the same shapes. A fixed
threshold keeps the tensors in mappings of their own. The cache off does as well here, but makes every shape's
primitive anew each time (the whole suite took 1.5x as long that way, RadGraph 3x).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import json
import sys
import torch
if sys.argv[1] == "rexrank":
    import rexrank.models.runtime  # fixes the threshold

def mib():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return [int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM")]

gelu, out = torch.nn.GELU(), [mib()]
with torch.inference_mode():
    for _ in range(2):
        for tokens in range(20, 420, 2):
            gelu(torch.randn(32, tokens, 3072))
        out.append(mib())
print(json.dumps(out))
"""


def main() -> None:
    print(f"{'':<34} {'RSS MiB: start':>14} {'after pass 1':>13} {'after pass 2':>13} {'peak':>6}")
    ways = (("glibc and oneDNN as they come", "default", {}), ("fixed mmap threshold (rexrank)", "rexrank", {}),
            ("oneDNN primitive cache off", "default", {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "0"}))
    for label, how, more in ways:
        env = {k: v for k, v in os.environ.items() if k not in ("ONEDNN_PRIMITIVE_CACHE_CAPACITY",
                                                                 "MALLOC_MMAP_THRESHOLD_")} | more
        done = subprocess.run([sys.executable, "-c", CHILD, how], env=env, capture_output=True, text=True, check=True)
        start, first, second = json.loads(done.stdout)
        print(f"{label:<34} {start[0]:>14,} {first[0]:>13,} {second[0]:>13,} {second[1]:>6,}")


if __name__ == "__main__":
    main()
