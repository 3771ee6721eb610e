"""RadEval's reward functions timed as `rewards.py` times rexrank's: run by `rewards.py --radeval PYTHON` in a Python
that has RadEval installed (its dependencies stay out of rexrank's environment), on the same synthetic pairs and the
same tiny random-weight stand-ins, which it finds in a Hugging Face cache under the Hub ids RadEval loads (offline).

Reads a JSON job on stdin ({"metrics": {rexrank name: [RadEval metric, key or null]}, "completions": [[...] per step],
"references": [...]}) and prints one JSON line per metric: {"name", "cold", "warm"} in ms/sample, or {"name",
"error"} with the first line of why it did not run.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> int:
    job = json.load(sys.stdin)
    from radeval.rewards import make_reward_fn

    references = job["references"]
    for name, (metric, key) in job["metrics"].items():
        try:
            reward = make_reward_fn(metric, key=key) if key else make_reward_fn(metric)
            spent = []
            for completions in job["completions"]:
                start = time.perf_counter()
                reward(completions=completions, ground_truth=references)
                spent.append((time.perf_counter() - start) * 1000 / len(completions))
            print(json.dumps({"name": name, "cold": spent[0], "warm": sum(spent[1:]) / max(1, len(spent) - 1)}),
                  flush=True)
        except Exception as err:  # noqa: BLE001  (reported in the table: what RadEval said)
            said = (str(err).strip().splitlines() or [type(err).__name__])[0]
            print(json.dumps({"name": name, "error": f"{type(err).__name__}: {said}"[:160]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
