"""What the commands share: exit codes, warnings, argument types and the runtime options (models, device,
precision, judge)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rexrank import stats
from rexrank.models import MODELS, PRECISIONS

if TYPE_CHECKING:  # the commands import what they run when they run it: `--help` loads no pandas or torch
    from rexrank.results import Result

OK, BAD_INPUT, METRIC_SKIPPED = 0, 2, 3


def warn(message: str) -> None:
    print(f"rexrank: warning: {message}", file=sys.stderr)


def warn_all(result: Result) -> None:
    for warning in result.warnings:
        warn(warning)


def whole(minimum: int):
    """An argparse type: a whole number from `minimum` (argparse reports the option and this message, exit 2)."""
    def whole(text: str) -> int:
        if not text.strip().lstrip("-").isdigit() or len(text) > 12 or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number from {minimum}, got {text!r}")
        return int(text)
    return whole


def out_folder(text: str) -> str:
    """An argparse type: a folder to write into, made if absent; an existing file is refused in words (it was
    `[Errno 20] Not a directory: 'x.csv/.partial'`)."""
    from pathlib import Path

    if Path(text).exists() and not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file; --out names a folder (made if absent) for the results")
    return text


def year_month(text: str) -> str:
    import re

    if not re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])", text):
        raise argparse.ArgumentTypeError(f"expected a year and month such as 2025-09, got {text!r}")
    return text


def concurrency(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from 1, or auto")
    return int(text)


def model_override(text: str) -> tuple[str, str]:
    key, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=PATH, got {text!r}")
    return key, path


def resampling_options(command: argparse.ArgumentParser, *, trials: bool = False) -> None:
    """--resamples (or, for the paired tests, --trials) and --seed: both are in each number's signature."""
    if trials:
        command.add_argument("--trials", type=whole(1), default=stats.TRIALS,
                             help=f"paired-bootstrap resamples and randomisations (default {stats.TRIALS:,})")
    else:
        command.add_argument("--resamples", type=whole(1), default=stats.RESAMPLES,
                             help=f"bootstrap resamples for the 95%% CIs (default {stats.RESAMPLES:,})")
    command.add_argument("--seed", type=whole(0), default=stats.SEED,
                         help=f"the resampling's random seed (default {stats.SEED})")


def runtime_options(command: argparse.ArgumentParser) -> None:
    """The model options and the judge's."""
    model_options(command)
    _judge_group(command)


def model_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--model", type=model_override, action="append", default=[], metavar="KEY=PATH",
                         help="a local copy of a model's weights (also REXRANK_MODEL_<KEY>); KEY one of "
                              + ", ".join(MODELS))
    command.add_argument("--device", help="torch device for model metrics (default: cuda if present, else cpu)")
    command.add_argument("--batch-size", type=whole(1), help="texts per forward pass (default: fitted to the free "
                         "GPU memory on CUDA, 32 on the CPU; halved on out-of-memory)")
    command.add_argument("--option", type=metric_option, action="append", default=[], metavar="METRIC.KEY=VALUE",
                         help="a setting that changes a metric's number, signed in its result (e.g. "
                              "bleu4.tokenize=none, bertscore.layer=4); `rexrank metrics` lists each metric's "
                              "options and their defaults, the values ReXrank's figures were made with")
    command.add_argument("--dtype", choices=PRECISIONS, default="fp32",
                         help="precision of the model metrics' matrix products (default fp32, as the reference "
                              "implementations; bf16 and fp16 run under autocast, faster on a GPU, and are recorded "
                              "in the signature: the maintainers rank fp32 numbers only). GREEN's local model "
                              "keeps its reference's precision (fp16 on CUDA, fp32 on the CPU), named in its "
                              "signature")


def metric_option(text: str) -> tuple[str, str, object]:
    """`--option METRIC.KEY=VALUE`: one of a metric's spec options (`rexrank metrics` lists them), typed."""
    from rexrank.scorers import REGISTRY, canonical

    target, equals, value = text.partition("=")
    metric, dot, key = target.partition(".")
    if not (equals and dot and key):
        raise argparse.ArgumentTypeError(f"{text!r}: expected METRIC.KEY=VALUE, e.g. bleu4.tokenize=none")
    name = canonical(metric)
    if name not in REGISTRY:
        raise argparse.ArgumentTypeError(f"{text!r}: unknown metric {metric!r}")
    try:
        return name, key, REGISTRY[name].read_option(key, value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from None


def metric_options(given: list[tuple[str, str, object]]) -> dict[str, dict]:
    """The `--option`s by metric, for `MetricSet(options=...)`."""
    out: dict[str, dict] = {}
    for metric, key, value in given:
        out.setdefault(metric, {})[key] = value
    return out


def _judge_group(command: argparse.ArgumentParser) -> None:
    judge = command.add_argument_group("LLM-judged metrics (green, fineradscore): an OpenAI-compatible endpoint; "
                                       "GREEN also runs its local model (--model GREEN=PATH)")
    judge.add_argument("--judge-url", help="e.g. http://localhost:8000/v1 (also REXRANK_JUDGE_URL); key in "
                                           "OPENAI_API_KEY")
    judge.add_argument("--judge-model", help="the model name the endpoint serves (also REXRANK_JUDGE_MODEL)")
    judge.add_argument("--judge-concurrency", type=concurrency, default=8, metavar="N|auto",
                       help="requests in flight at once (default 8); auto: as many as a vLLM server's KV cache holds "
                            "at its max_model_len, read from its /metrics")
    judge.add_argument("--allow-endpoint", action="append", default=[], metavar="URL",
                       help="send credentialed data (MIMIC-CXR, CheXpert Plus, ReXGradient, RadRBench-CXR) to "
                            "this non-local endpoint: only one your data use agreement covers")
    judge.add_argument("--green-trust-remote-code", action="store_true",
                       help="GREEN's local model: run its repository's own tokenizer code (tokenization_chexagent.py "
                            "at the pinned commit), which it ships instead of a tokenizer.json; recorded in the "
                            "signature")
    judge.add_argument("--fineradscore-shots", metavar="SHOTS",
                       help="FineRadScore's example turns: synthetic (default, ours), zero-shot, or the reference's "
                            "own from a rajpurkarlab/FineRadScore checkout or a JSON file of messages")


def judge_options(args: argparse.Namespace) -> dict:
    return {"judge_url": args.judge_url, "judge_model": args.judge_model, "concurrency": args.judge_concurrency,
            "allow_endpoints": args.allow_endpoint, "fineradscore_shots": args.fineradscore_shots,
            "green_trust_remote_code": args.green_trust_remote_code}
