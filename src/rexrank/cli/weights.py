"""`rexrank models`: each model's pin, where it resolves here, and its download."""

from __future__ import annotations

import argparse

from rexrank.cli.options import METRIC_SKIPPED, OK
from rexrank.errors import InputError
from rexrank.models import MODELS, ModelUnavailable, resolve

JUDGE_MODELS = ("GREEN",)


def add(commands) -> None:
    weights = commands.add_parser("models", help="list the models and their pins, check where each resolves here, "
                                                 "or download them")
    weights.add_argument("action", choices=("list", "check", "download"))
    weights.add_argument("keys", nargs="*", metavar="MODEL", help=", ".join(k.lower() for k in MODELS))
    weights.add_argument("--all", action="store_true", help="download every model but the judges (name green to "
                                                             "get GREEN's 13.5 GB)")
    weights.set_defaults(run=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    """`models list`: each model and its pin; `models check`: where each resolves here, what is missing and what to
    run (nothing downloaded); `models download`: fetch into the HF cache."""
    if args.action == "list":
        width = max(len(spec.repo_id) for spec in MODELS.values()) + 14
        print(f"{'model':<18} {'repository @ pinned commit':<{width}} what")
        for key, spec in MODELS.items():
            print(_fit(f"{key:<18} {spec.pinned:<{width}} {spec.what.split(' (')[0]}"))
        print("override any with REXRANK_MODEL_<MODEL>=PATH or --model MODEL=PATH; `rexrank models check` says where "
              "each resolves here")
        return OK
    if args.action == "check":
        return _check_models()
    # --all: every model the metrics of `all` need; a judge model (GREEN, 13.5 GB) only when named
    keys = [k for k in MODELS if k not in JUDGE_MODELS] if args.all else [k.upper() for k in args.keys]
    unknown = [k for k in keys if k not in MODELS]
    if unknown or not keys:
        raise InputError(f"name models to download ({', '.join(k.lower() for k in MODELS)}) or pass --all"
                         if not keys else f"unknown model {unknown[0].lower()!r}")
    failed = False
    for key in keys:
        try:
            found = resolve(key, download=True)
            state = f"{found.identity} ({found.source}) at {found.path}"
        except ModelUnavailable as err:
            failed, state = True, f"not available: {err}"
        print(f"{key}: {state}")
    return METRIC_SKIPPED if failed else OK


def _check_models() -> int:
    """One table: each model, its pin, where it resolves, the files it lacks, and what to run to fix it."""
    from rexrank.models import status

    rows = [status(key) for key in MODELS]
    print(f"{'model':<18} {'pinned':<13} {'resolves':<22} {'files':<6} fix")
    for row in rows:
        have = len(row.spec.files) - len(row.missing)
        fix = f"rexrank models download {row.spec.key.lower()}" if row.missing and row.where == "not here" else row.fix
        if row.missing and have:
            fix += f" (missing {', '.join(row.missing)})"
        print(_fit(f"{row.spec.key:<18} {row.spec.revision[:12]:<13} {_fit(row.where, 22):<22} "
                   f"{have}/{len(row.spec.files):<4} {fix}".rstrip()))
    needed = [r for r in rows if r.missing and r.spec.key not in JUDGE_MODELS]
    if any(r.missing for r in rows):
        print("or set REXRANK_MODEL_<MODEL>=PATH to a local copy in the reference's own format")
    if needed:
        print(f"{len(needed)} model(s) the metrics need are not here: `rexrank models download --all` fetches "
              "them (GREEN, the judge, only when named)")
    return METRIC_SKIPPED if needed else OK


def _fit(text: str, width: int = 120) -> str:
    """`text` cut to `width` characters, an ellipsis marking the cut."""
    return text if len(text) <= width else text[: width - 1] + "\u2026"
