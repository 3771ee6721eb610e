"""The data commands: `build-dataset` (a test set from the user's own download) and `score-radrbench`."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from rexrank.catalog import RADRBENCH_CXR, REXVQA, TEST_SETS
from rexrank.cli.options import OK, out_folder, resampling_options, runtime_options, warn
from rexrank.errors import InputError, MetricUnavailable


def add(commands) -> None:
    build = commands.add_parser("build-dataset", help="build a test set from your own download as a Hub dataset",
                                formatter_class=argparse.RawTextHelpFormatter, epilog=_sources_help)
    *names, last = (*TEST_SETS, RADRBENCH_CXR.name, REXVQA.name)  # what rexrank.builders builds, from the catalog
    build.add_argument("name", help=f"{', '.join(names)} or {last}")
    build.add_argument("--source", action="append", required=True, metavar="PATH",
                       help="ReXrank's split JSON, or the original release's files (repeat for several); for "
                            "radrbench-cxr the downloaded JSON files or their folder")
    build.add_argument("--out", required=True, type=out_folder,
                       help="the dataset folder to write (load_dataset(OUT, 'findings'))")
    build.add_argument("--split", help="default: the split ReXrank scores (test; valid for chexpert-plus)")
    build.add_argument("--image-root", help="where the images live, to check and relativise image paths")
    build.add_argument("--push-to", metavar="ORG/NAME", help="also upload to this Hub dataset repo (private)")
    build.add_argument("--private", action="store_true", help="(the default) push to a private repo")
    build.add_argument("--public", action="store_true", help="push a public repo (IU-Xray only)")
    build.set_defaults(run=cmd_build_dataset)

    from rexrank.radrbench.answers import ANSWER_RULES, REXRANK

    radr = commands.add_parser("score-radrbench", help="accuracy of a reasoning model on RadRBench-CXR")
    radr.add_argument("--predictions", required=True,
                      help="JSON list or JSONL of {config, item_id, output} (the model's <think>/<answer> text), or "
                           "one of ChestX-Reasoner's output files (a list of {question, answer, pred})")
    radr.add_argument("--dataset", required=True, help="a folder built by rexrank build-dataset radrbench-cxr")
    radr.add_argument("--config", action="append", default=[], metavar="SOURCE.TASK",
                      help="only these configs (e.g. mimic-cxr.single, or the authors' mimic_single); default all")
    radr.add_argument("--answer-rule", choices=ANSWER_RULES, default=REXRANK,
                      help="how answers are read: rexrank (the board's: one parser, an unreadable answer wrong) or "
                           "the authors' eval/accuracy_eval.py branch for a model (chestx-reasoner: chosen by "
                           "--model-name as their script chose it; unreadable answers left out); signed")
    radr.add_argument("--out", default="rexrank-results", type=out_folder, help="folder for the result JSON")
    radr.add_argument("--model-name", help="default: the predictions file's name")
    resampling_options(radr)
    runtime_options(radr)  # the judge options: RadRScore runs when a judge model is given
    radr.set_defaults(run=cmd_score_radrbench)


def _sources_help() -> str:
    import textwrap

    from rexrank.builders import BUILDERS

    lines = ["sources (for the report test sets, ReXrank's split JSON works too):"]
    for name, chosen in BUILDERS.items():
        if chosen.originals_help:
            lines += textwrap.wrap(chosen.originals_help, 100, initial_indent=f"  {name}: ",
                                   subsequent_indent=" " * (len(name) + 4), break_on_hyphens=False)
    return "\n".join(lines)


def cmd_build_dataset(args: argparse.Namespace) -> int:
    """A test set from the user's own download, as a Hub dataset folder; optionally pushed to a private repo."""
    from rexrank.builders import builder
    from rexrank.data.build import push_dataset

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
    from rexrank.radrbench.answers import REXRANK
    from rexrank.radrbench.outputs import CHESTX_REASONER, load_outputs
    from rexrank.radrbench.score import load_items, score_outputs, write_results

    items = load_items(args.dataset, configs=args.config or None)
    outputs = load_outputs(args.predictions, items, args.config)
    if outputs.set_aside:
        warn(f"--config {', '.join(args.config)}: {sum(outputs.set_aside.values()):,} output(s) of other configs set "
             "aside (" + ", ".join(f"{c} {n:,}" for c, n in sorted(outputs.set_aside.items())) + ")")
    # The authors' script chose a model's reading by its folder's name: so does a bare chestx-reasoner.
    model = args.model_name or (Path(args.predictions).resolve().parent.name if outputs.layout == CHESTX_REASONER
                                else Path(args.predictions).stem)
    rule = REXRANK if args.answer_rule == REXRANK else _branch(args.answer_rule, model)
    scores = score_outputs(items, outputs, args.resamples, args.seed, rule)
    if scores.missing:
        fate = "empty outputs (wrong)" if rule == REXRANK else "empty outputs (left out, by this rule)"
        warn(f"{len(scores.missing):,} item(s) have no output and are scored as {fate}, e.g. "
             + ", ".join(scores.missing[:5]))
    for note in scores.notes:
        warn(note)
    print(f"{'source':<14} {'task':<16} {'items':>6} {'scored':>6} {'accuracy':>9}  {'95% CI':<17} answer failures")
    for _, r in scores.rows.iterrows():
        failures = ", ".join(f"{k} {v}" for k, v in json.loads(r["failures"]).items())
        value = "n/a" if r["accuracy"] is None or r["accuracy"] != r["accuracy"] else f"{r['accuracy']:.4f}"
        ci = "" if value == "n/a" else f"[{r['low']:.4f}, {r['high']:.4f}]"
        task = "all (options)" if (r["source"], r["task"]) == ("all", "all") else r["task"]
        print(f"{r['source']:<14} {task:<16} {r['items']:>6,} {r['scored']:>6,} {value:>9}  {ci:<17} {failures}")
    print(f"signature: {scores.signature}")
    open_ended = _open_ended(items, outputs, args)
    reasoning = _reasoning(items, outputs, args) if args.judge_model or os.environ.get("REXRANK_JUDGE_MODEL") else None
    out = Path(args.out)
    write_results(out, model, scores, reasoning, open_ended)
    print(f"wrote {out / 'radrbench-cxr.accuracy.json'}, {out / 'radrbench-cxr.per_item.parquet'}")
    return OK


def _branch(rule: str, model: str) -> str:
    from rexrank.radrbench import chestx_reasoner

    which = chestx_reasoner.branch(rule, model)
    print(f"answers read as ChestX-Reasoner's eval/accuracy_eval.py reads them for model {model!r}: its {which} branch")
    return f"{chestx_reasoner.RULE}:{which}"


def _reasoning(items, outputs, args: argparse.Namespace):
    """RadRScore through the judge, printed both ways with their signatures."""
    from rexrank.radrbench.score import reasoning_rows, reasoning_table
    from rexrank.scorers.radrscore import judge_for

    judge = judge_for(args.judge_url, args.judge_model, concurrency=args.judge_concurrency,
                      allow_endpoints=args.allow_endpoint, progress=True)
    reasoning = reasoning_rows(items, outputs, judge, args.resamples, args.seed)
    judged = reasoning.result
    print(f"\nRadRScore, the board's figures (items with reasoning annotations; one whose replies could not all be "
          f"read counts 0; judge {judge.identity})")
    print("\n".join(reasoning_table(reasoning.rows)))
    print(f"signature: {reasoning.signature}")
    print("\nRadRScore over the judged items only (the authors' figures: an item whose replies could not all be read "
          "is left out)")
    print("\n".join(reasoning_table(reasoning.judged_rows)))
    print(f"signature: {reasoning.judged_signature}")
    if unread := len(judged.scores) - judged.judged:
        warn(f"RadRScore: {unread} item(s) whose replies could not be read ({judged.unparseable} unparseable, "
             f"{judged.cut} cut at the length limit, {judged.refused} refused by the judge) count 0, the worst, in "
             "the board's figures and are left out of the judged items' figures")
    return reasoning


def _open_ended(items, outputs, args: argparse.Namespace):
    """RaTEScore of the free-text task's answers, printed beside the accuracy table; None when no item is of the
    free-text task, or when RaTEScore cannot run here (its rows then say why, with no number)."""
    from rexrank.radrbench.answers import MULTI_NO_OPTION
    from rexrank.radrbench.score import free_text_lines, open_ended_rows
    from rexrank.scorers.ratescore import RaTEScore

    if not (items["task"] == MULTI_NO_OPTION).any():
        return None
    found, unavailable = None, None
    try:
        found = open_ended_rows(items, outputs, RaTEScore(device=args.device, batch_size=args.batch_size,
                                                          dtype=args.dtype, progress=False), args.resamples, args.seed)
    except MetricUnavailable as err:
        unavailable = str(err)
        warn(f"RaTEScore of the free-text task (multi_no_option) not run here: {err}")
    print("\n".join(free_text_lines(items, found, unavailable)))
    return found
