"""Why rexrank turns oneDNN's primitive cache off: resident memory after GELU (the one op of the encoders that runs
through oneDNN here) on a batch of every padded length from 20 to 419 tokens, twice, with the cache at oneDNN's
default (1,024 primitives) and at 0, each in a fresh process.

    python benchmarks/primitive_cache.py

A long scoring run meets its batches in hundreds of shapes; each cached primitive is a small allocation that lives
on among the batches' large short-lived tensors.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

CHILD = """
import json
import torch

def mib():
    fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
    return [int(fields[k].split()[0]) // 1024 for k in ("VmRSS", "VmHWM")]

gelu, out = torch.nn.GELU(), [mib()]
with torch.inference_mode():
    for _ in range(2):
        for tokens in range(20, 420):
            gelu(torch.randn(32, tokens, 3072))
        out.append(mib())
print(json.dumps(out))
"""


def main() -> None:
    print(f"{'cache':<22} {'RSS MiB: start':>14} {'after pass 1':>13} {'after pass 2':>13} {'peak':>6}")
    for label, capacity in (("oneDNN default (1024)", None), ("off (rexrank)", "0")):
        env = {k: v for k, v in os.environ.items() if k != "ONEDNN_PRIMITIVE_CACHE_CAPACITY"}
        if capacity is not None:
            env["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] = capacity
        done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
        start, first, second = json.loads(done.stdout)
        print(f"{label:<22} {start[0]:>14,} {first[0]:>13,} {second[0]:>13,} {second[1]:>6,}")


if __name__ == "__main__":
    main()
