"""The judge's concurrency from its endpoint's capacity (`Judge(concurrency="auto")`, `--judge-concurrency auto`).

A vLLM server says what it holds: `/metrics` carries `vllm:cache_config_info`, whose labels include the KV cache's
`num_gpu_blocks` and `block_size`, and `/v1/models` gives the served model's `max_model_len`. Blocks x block size /
max_model_len is how many requests of the longest allowed length fit in the KV cache at once, the "maximum
concurrency" vLLM logs at start-up: more in flight only queue on the server (or are preempted), fewer leave the GPU
idle. Other endpoints (OpenAI's API, a server without these metrics) give None and the judge keeps its default.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request

AUTO_DEFAULT = 8  # when the endpoint does not say
AUTO_CAP = 256  # client threads at most (vLLM's default max_num_seqs: requests beyond it wait in its queue)
_CACHE_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}", re.MULTILINE)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _get(url: str, api_key: str | None, timeout: float) -> bytes:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the judge's own endpoint)
        return response.read(4 * 1024 * 1024)


def endpoint_capacity(base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY",
                      timeout: float = 10.0) -> tuple[int | None, str]:
    """(requests the endpoint serves at once, how that was worked out), or (None, why it could not be)."""
    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    key = os.environ.get(api_key_env)
    try:
        metrics = _get(f"{root}/metrics", key, timeout).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError) as err:
        return None, f"no metrics at {root}/metrics ({type(err).__name__}: {err})"
    found = _CACHE_INFO.search(metrics)
    labels = dict(_LABEL.findall(found["labels"])) if found else {}
    try:
        blocks, block_size = int(float(labels["num_gpu_blocks"])), int(float(labels["block_size"]))
    except (KeyError, ValueError):
        return None, f"{root}/metrics has no vllm:cache_config_info with num_gpu_blocks and block_size"
    try:
        served = json.loads(_get(f"{root}/v1/models", key, timeout))["data"]
        length = next(int(m["max_model_len"]) for m in served if m.get("id") == model)
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError, StopIteration) as err:
        return None, f"{root}/v1/models gives no max_model_len for {model} ({type(err).__name__})"
    if blocks < 1 or block_size < 1 or length < 1:
        return None, f"vLLM reports {blocks} KV-cache blocks of {block_size} tokens and max_model_len {length}"
    capacity = max(1, blocks * block_size // length)
    return capacity, (f"vLLM's KV cache holds {blocks:,} blocks x {block_size} tokens = {capacity:,} requests of "
                      f"max_model_len {length:,}")
