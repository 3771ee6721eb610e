"""The data commands: `build-dataset` (a test set from the user's own download) and `score-radrbench`."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rexrank.cli.options import OK, resampling_options, runtime_options, warn
from rexrank.errors import InputError, MetricUnavailable


def add(commands) -> None:
    build = commands.add_parser("build-dataset", help="build a test set from your own download as a Hub dataset",
                                formatter_class=argparse.RawTextHelpFormatter, epilog=_sources_help)
    build.add_argument("name", help="mimic-cxr, iu-xray, chexpert-plus, rexgradient or radrbench-cxr")
    build.add_argument("--source", action="append", required=True, metavar="PATH",
                       help="ReXrank's split JSON, or the original release's files (repeat for several); for "
                            "radrbench-cxr the downloaded JSON files or their folder")
    build.add_argument("--out", required=True, help="the dataset folder to write (load_dataset(OUT, 'findings'))")
    build.add_argument("--split", help="default: the split ReXrank scores (test; valid for chexpert-plus)")
    build.add_argument("--image-root", help="where the images live, to check and relativise image paths")
    build.add_argument("--push-to", metavar="ORG/NAME", help="also upload to this Hub dataset repo (private)")
    build.add_argument("--private", action="store_true", help="(the default) push to a private repo")
    build.add_argument("--public", action="store_true", help="push a public repo (IU-Xray only)")
    build.set_defaults(run=cmd_build_dataset)

    radr = commands.add_parser("score-radrbench", help="accuracy of a reasoning model on RadRBench-CXR")
    radr.add_argument("--predictions", required=True,
                      help="JSON list or JSONL of {config, item_id, output} (the model's <think>/<answer> text)")
    radr.add_argument("--dataset", required=True, help="a folder built by rexrank build-dataset radrbench-cxr")
    radr.add_argument("--config", action="append", default=[], metavar="SOURCE.TASK",
                      help="only these configs (e.g. mimic-cxr.single); default all")
    radr.add_argument("--out", default="rexrank-results", help="folder for the result JSON")
    radr.add_argument("--model-name", help="default: the predictions file's name")
    resampling_options(radr)
    runtime_options(radr)  # the judge options: RadRScore runs when a judge model is given
    radr.set_defaults(run=cmd_score_radrbench)


def _sources_help() -> str:
    import textwrap

    from rexrank.data.catalog import BUILDERS

    lines = ["sources (for the report test sets, ReXrank's split JSON works too):"]
    for name, chosen in BUILDERS.items():
        if chosen.originals_help:
            lines += textwrap.wrap(chosen.originals_help, 100, initial_indent=f"  {name}: ",
                                   subsequent_indent=" " * (len(name) + 4), break_on_hyphens=False)
    return "\n".join(lines)


def cmd_build_dataset(args: argparse.Namespace) -> int:
    """A test set from the user's own download, as a Hub dataset folder; optionally pushed to a private repo."""
    from rexrank.data.build import push_dataset
    from rexrank.data.catalog import builder

    chosen = builder(args.name)
    if args.public and (chosen.always_private or chosen.info.credentialed):
        raise InputError(f"{args.name} is credentialed data ({chosen.info.access.split('.')[0]}): it may only be "
                         "pushed to a private or gated repo; drop --public")
    build = chosen.read([Path(s) for s in args.source], args.split, Path(args.image_root) if args.image_root else None)
    folder = chosen.write(build, args.out)
    info = json.loads((folder / "build_info.json").read_text(encoding="utf-8"))
    print(chosen.summary(info, folder))
    for note in build.notes:
        warn(note)
    official = info.get("official")  # report test sets only
    if official and not official["matches"]:
        missing, extra = official.get("missing", []), official.get("extra", [])
        detail = "".join(f"; {len(ids):,} {what}: {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}"
                         for what, ids in (("missing", missing), ("extra", extra)) if ids)
        warn(f"the official {args.name} {build.split} split has {official['official']:,} studies, this build "
              f"{official['studies']:,}{detail} (all in {folder / 'build_info.json'})")
    if args.push_to:
        url = push_dataset(folder, args.push_to, private=not args.public)
        print(f"pushed to {'public' if args.public else 'private'} repo {args.push_to}: {url}")
    return OK


def cmd_score_radrbench(args: argparse.Namespace) -> int:
    """Accuracy of a reasoning model on RadRBench-CXR, per source and task, with 95% CIs and answer failures."""
    from rexrank.radrbench.score import load_items, load_outputs, score_outputs, write_results

    items = load_items(args.dataset, configs=args.config or None)
    outputs = load_outputs(args.predictions)
    scores = score_outputs(items, outputs, args.resamples, args.seed)
    if scores.missing:
        warn(f"{len(scores.missing):,} item(s) have no output and are scored as empty outputs (wrong), e.g. "
              + ", ".join(scores.missing[:5]))
    print(f"{'source':<14} {'task':<16} {'items':>6} {'accuracy':>9}  {'95% CI':<17} answer failures")
    for _, r in scores.rows.iterrows():
        failures = ", ".join(f"{k} {v}" for k, v in json.loads(r["failures"]).items())
        print(f"{r['source']:<14} {r['task']:<16} {r['items']:>6,} {r['accuracy']:>9.4f}  "
              f"[{r['low']:.4f}, {r['high']:.4f}]  {failures}")
    print(f"signature: {scores.signature}")
    open_ended = _open_ended(items, outputs, args)
    reasoning = None
    if args.judge_model or os.environ.get("REXRANK_JUDGE_MODEL"):
        from rexrank.radrbench.score import reasoning_rows, reasoning_table
        from rexrank.scorers.radrscore import judge_for

        judge = judge_for(args.judge_url, args.judge_model, concurrency=args.judge_concurrency,
                          allow_endpoints=args.allow_endpoint, progress=True)
        reasoning, judged = reasoning_rows(items, outputs, judge, args.resamples, args.seed)
        print(f"\nRadRScore (items with reasoning annotations; judge {judge.identity})")
        print("\n".join(reasoning_table(reasoning)))
        if unread := len(judged.scores) - judged.judged:
            warn(f"RadRScore: {unread} item(s) whose replies could not be read ({judged.unparseable} unparseable, "
                 f"{judged.cut} cut at the length limit, {judged.refused} refused by the judge) count 0, the worst, in "
                 "the means")
        print(f"signature: {judged.signature}")
    out = Path(args.out)
    write_results(out, args.model_name or Path(args.predictions).stem, scores, reasoning,
                  judged if reasoning is not None else None, open_ended)
    print(f"wrote {out / 'radrbench-cxr.accuracy.json'}, {out / 'radrbench-cxr.per_item.parquet'}")
    return OK


def _open_ended(items, outputs, args: argparse.Namespace):
    """RaTEScore of the free-text task's answers, printed; None (and one line why) when it cannot run here."""
    from rexrank.radrbench.score import open_ended_rows
    from rexrank.scorers.ratescore import RaTEScore

    try:
        found = open_ended_rows(items, outputs, RaTEScore(device=args.device, batch_size=args.batch_size,
                                                          dtype=args.dtype, progress=False), args.resamples, args.seed)
    except MetricUnavailable as err:
        warn(f"RaTEScore of the free-text task (multi_no_option) not run here: {err}")
        return None
    if found is not None:
        rows, signature = found
        print("\nfree-text task (multi_no_option), RaTEScore of the answer against the reference answer")
        for _, r in rows.iterrows():
            print(f"{r['source']:<14} {r['items']:>6,} {r['ratescore']:>9.4f}  [{r['low']:.4f}, {r['high']:.4f}]")
        print(f"signature: {signature}")
    return found
