"""The board's commands: `submit`, `leaderboard`, `publish` and `import-rexrank-csv`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from rexrank.catalog import ACCESS
from rexrank.cli.options import BAD_INPUT, OK, warn, year_month
from rexrank.errors import InputError


def add(commands) -> None:
    send = commands.add_parser("submit", help="open a pull request with your results on the leaderboard's results "
                                              "repo")
    send.add_argument("--results", help="the --out folder of rexrank score (results, per-study tables, predictions)")
    send.add_argument("--name", required=True, help="the model's name on the board")
    send.add_argument("--model-name", metavar="NAME", help="whose results to send when --results holds several models' "
                      "(the --model-name rexrank score recorded; default: the one model there)")
    send.add_argument("--institution", default="", help="shown on the board beside the model's name")
    send.add_argument("--url", default="", help="the model's page (code or weights)")
    send.add_argument("--paper", default="", help="a link to the paper")
    send.add_argument("--code", default="", help="a link to the model's code")
    send.add_argument("--access", choices=tuple(ACCESS), default="",
                      help="how the model can be had: its weights are open, or it is served by an API (the board "
                           "filters on it; unsaid: unknown)")
    send.add_argument("--trained-on", action="append", default=[], metavar="DATASET", help="repeat for several")
    send.add_argument("--contact", default="", help="an email or handle the maintainers may reach")
    send.add_argument("--private", action="append", default=[], metavar="DATASET.TASK=FILE",
                      help="predictions for a private test set, scored by the maintainers "
                           "(e.g. rexgradient.findings=preds.json)")
    send.add_argument("--model", dest="model_dir", metavar="DIR",
                      help="a code submission: the model/ folder (model.yaml, inference.py, requirements.txt) the "
                           "maintainers run, on ReXGradient's private images among others (docs/submitting.md; try "
                           "it first with rexrank infer)")
    send.add_argument("--repo", default=os.environ.get("REXRANK_RESULTS_REPO", "rexrank/results"),
                      help="the results repo, a Hub dataset (default REXRANK_RESULTS_REPO or rexrank/results)")
    send.add_argument("--dry-run", action="store_true", help="check and list what would be uploaded")
    send.set_defaults(run=cmd_submit)

    board = commands.add_parser("leaderboard", help="open the leaderboard app (the Space) on this machine")
    shown = board.add_mutually_exclusive_group()
    shown.add_argument("--results", metavar="PATH_OR_ID",
                       help="a results repo (a local folder holding leaderboard.parquet, or a Hub dataset ORG/NAME), "
                            "or a rexrank score --out folder: your own results, shown beside the official ReXrank "
                            "tables (default REXRANK_RESULTS, else the official tables shipped with rexrank, as "
                            "published in 2025-09, no network)")
    shown.add_argument("--demo", action="store_true", help="the embedded synthetic demo board instead")
    board.add_argument("--port", type=int, help="default 7860 (GRADIO_SERVER_PORT)")
    board.set_defaults(run=cmd_leaderboard)

    _publish_commands(commands)

    official = commands.add_parser("import-rexrank-csv", help="read official ReXrank leaderboard CSVs, "
                                   "checking each row's 1/RadCliQ-v1 against its components")
    official.add_argument("files", nargs="+", metavar="FILE",
                          help="findings_result_<dataset>.csv or result_<dataset>.csv")
    official.add_argument("--json", action="store_true", help="one JSON object per row")
    official.add_argument("--out", metavar="REPO", help="also write each row as an imported result into the results "
                          "repo folder REPO (REPO/imported/<dataset>.<task>.<model>.json), where the board reads it")
    official.add_argument("--as-of", type=year_month, metavar="YYYY-MM",
                          help="when the tables were published: stamped on each imported result")
    official.set_defaults(run=cmd_import)


def cmd_submit(args: argparse.Namespace) -> int:
    """Check `rexrank score` outputs and open a pull request with them on the results repo."""
    from rexrank.submission import ModelCard, submit

    card = ModelCard(args.name, args.institution, args.url, args.paper, trained_on=tuple(args.trained_on),
                     contact=args.contact, code=args.code, access=args.access)
    private = {}
    for spec in args.private:
        key, _, path = spec.partition("=")
        dataset, _, task = key.rpartition(".")
        if not path or not dataset:
            raise InputError(f"--private {spec!r}: expected DATASET.TASK=FILE, e.g. rexgradient.findings=preds.json")
        private[(dataset, task)] = Path(path)
    files, url, plan = submit(card, Path(args.results) if args.results else None, args.repo, private, args.dry_run,
                              model=Path(args.model_dir) if args.model_dir else None, model_name=args.model_name)
    print(f"submission {card.submission_id}: {len(files)} files, {sum(size for _, size in files):,} bytes")
    for path, size in files:
        print(f"  {path}  ({size:,} bytes)")
    print("on the board:")
    for line in plan:
        print(f"  {line}")
    print(f"dry run: nothing uploaded to {args.repo}" if url is None else f"pull request opened: {url}")
    return OK


def cmd_leaderboard(args: argparse.Namespace) -> int:
    try:
        from rexrank.board.app import main as launch
    except ImportError as err:  # gradio is the `space` extra
        print(f"rexrank: error: the leaderboard needs gradio ({err}); pip install 'rexrank[space]'", file=sys.stderr)
        return BAD_INPUT
    if args.results is not None:  # a repo that cannot be read fails now, not as an empty board in the browser
        from rexrank.board.sources import UNVERIFIED, is_results_repo, read_board, score_results

        folder = Path(args.results).expanduser()
        if folder.is_dir() and not is_results_repo(folder) and not score_results(folder):
            raise InputError(f"--results {args.results}: neither a results repo (leaderboard.parquet, submissions/ or "
                             "imported/) nor a rexrank score --out folder (<dataset>.<task>.<model>.json results): "
                             "nothing to show")
        try:
            board = read_board(args.results)
        except Exception as err:  # noqa: BLE001 - a missing folder, a Hub repo offline or without a board
            raise InputError(f"--results {args.results}: cannot read a board there ({type(err).__name__}: "
                             f"{str(err)[:300]}); give a results repo folder, a rexrank score --out folder or a Hub "
                             "dataset ORG/NAME") from None
        if folder.is_dir() and not is_results_repo(folder):
            mine = board[board["provenance"] == UNVERIFIED]
            print(f"{args.results}: {len(mine)} result(s) of rexrank score shown as unverified rows beside the "
                  "official ReXrank tables (not ranked; rexrank submit sends them to be re-scored)")
            for left in board.attrs.get("unreadable") or []:
                warn(f"left out: {left}")
    launch(args.results, args.port, demo=args.demo)
    return OK


def cmd_import(args: argparse.Namespace) -> int:
    from rexrank.official import imported_path, read_official_csv

    for path in args.files:
        rows = read_official_csv(path)
        for row in rows:
            if row.consistent is False:
                low, high = row.implied_inverse_radcliq or (float("nan"), float("nan"))
                warn(f"{path}: {row.model.name} (rank {row.rank}): published 1/RadCliQ-v1 "
                      f"{row.values['radcliq_v1']} is outside [{low:.4f}, {high:.4f}] implied by its rounded "
                      "components: flagged inconsistent")
            if args.json:
                print(json.dumps(row.to_json()))
            if args.out:
                row.to_result(args.as_of).write(imported_path(Path(args.out), row))
        if not args.json:
            flagged = sum(r.consistent is False for r in rows)
            print(f"{path}: {len(rows)} rows, {flagged} flagged inconsistent")
    return OK


def cmd_publish(args: argparse.Namespace) -> int:
    """Publish metric Spaces, a built dataset or the leaderboard Space; print what changed (or would)."""
    from rexrank import publish

    if args.what == "metrics":
        only = args.only.split(",") if args.only else None
        outcomes = publish.publish_metrics(args.org, only, args.dry_run, metrics_dir=Path(args.metrics_dir))
    elif args.what == "dataset":
        outcomes = [publish.publish_dataset(args.name, Path(args.source), args.repo, args.private, args.gated,
                                            args.dry_run)]
    else:
        outcomes = [publish.publish_space(args.repo, args.results, args.dry_run, folder=Path(args.source))]
    for outcome in outcomes:
        print("\n".join(outcome.lines()))
    if args.dry_run:
        print("dry run: nothing was changed on the Hub")
    return OK


def _publish_commands(commands) -> None:
    from rexrank.publish import METRICS_DIR, SPACE_DIR

    group = commands.add_parser("publish", help="publish metric Spaces, a built dataset or the leaderboard Space "
                                                "to the Hub (HF_TOKEN or `hf auth login` with write access)")
    kinds = group.add_subparsers(dest="what", required=True)
    metrics = kinds.add_parser("metrics", help="one Gradio Space per metrics/<name>/ module: ORG/<name>")
    metrics.add_argument("--org", required=True, help="the user or organisation that owns the Spaces")
    metrics.add_argument("--only", metavar="NAME,...", help="only these metric modules")
    metrics.add_argument("--metrics-dir", default=str(METRICS_DIR), metavar="DIR",
                         help="the metrics/ folder of a rexrank checkout (default: this checkout's)")
    dataset = kinds.add_parser("dataset", help="a folder built by rexrank build-dataset to a Hub dataset repo")
    dataset.add_argument("name", help="the dataset it was built as (iu-xray, mimic-cxr, ...)")
    dataset.add_argument("--from", dest="source", required=True, metavar="DIR", help="the build-dataset --out folder")
    dataset.add_argument("--repo", required=True, metavar="ORG/NAME")
    dataset.add_argument("--private", action="store_true", help="a private repo")
    dataset.add_argument("--gated", action="store_true", help="gated: users request access, maintainers approve")
    space = kinds.add_parser("space", help="the leaderboard Space from space/, reading the results repo")
    space.add_argument("--repo", required=True, metavar="ORG/NAME")
    space.add_argument("--results", required=True, metavar="ORG/RESULTS", help="the results dataset repo the board "
                                                                              "reads (the REXRANK_RESULTS variable)")
    space.add_argument("--from", dest="source", default=str(SPACE_DIR), metavar="DIR",
                       help="the space/ folder of a rexrank checkout (default: this checkout's)")
    for command in (metrics, dataset, space):
        command.add_argument("--dry-run", action="store_true", help="list what would change; change nothing")
        command.set_defaults(run=cmd_publish)
