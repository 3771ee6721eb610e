"""The `rexrank` command.

Exit codes: 0 done; 2 bad input (nothing written); 3 done, but a requested metric could not run
(the others' results are written and the message says how to enable it); 130 interrupted (Ctrl-C: run it again).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rexrank import __version__, demo, stats
from rexrank.catalog import ACCESS
from rexrank.errors import InputError, MetricUnavailable
from rexrank.models import MODELS, PRECISIONS, ModelUnavailable, clear_overrides, resolve, set_override
from rexrank.reports import TASKS
from rexrank.results import ModelInfo, Result
from rexrank.scorecard import CHUNK, MetricSet, result_paths, score_file
from rexrank.scorers import AVAILABLE, COMPOSITES, JUDGED, METRICS, SCORERS, metric_class, parse_metrics
from rexrank.shards import merge, parse_shard, shard_paths

OK, BAD_INPUT, METRIC_SKIPPED = 0, 2, 3
INTERRUPTED = ("rexrank: interrupted; nothing half-written: run the same command again to resume (model features "
               "and judge replies computed so far are kept in the cache)")


def _warn(message: str) -> None:
    print(f"rexrank: warning: {message}", file=sys.stderr)


def _warn_all(result: Result) -> None:
    for warning in result.warnings:
        _warn(warning)


def _show(value) -> str:
    """An extra as one line: floats to 4 places, counts as they are, nested groups in parentheses."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {f'({_show(v)})' if isinstance(v, dict) else _show(v)}" for k, v in value.items())
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def format_result(result: Result) -> str:
    c = result.counts
    lines = [f"{result.model.name} · {result.dataset} {result.split} · {result.task} · "
             f"{c.get('scored', 0):,} studies scored, {c.get('dropped_by_task', 0):,} left out by the task"]
    lines.append(f"  {'metric':<12} {'value':>8}  {'95% CI':<19} {'n':>6}")
    for name, m in result.metrics.items():
        shown = "1/mean" if m.statistic == "inverse_mean" else ""
        value = "n/a" if m.value is None else f"{m.value:.4f}"
        ci = "" if m.low is None or m.high is None else f"[{m.low:.4f}, {m.high:.4f}]"
        flag = "  (mean <= 0: inverse meaningless)" if m.non_positive_mean else ""
        lines.append(f"  {name:<12} {value:>8}  {ci:<19} {m.n or '':>6} {shown}{flag}".rstrip())
    for name, why in result.skipped.items():
        lines.append(f"  {name:<12} skipped: {why}")
    for name, values in result.extras.items():
        lines.append(f"  {name}: {_show(values)}")
    lines += [f"  {name}: {m.signature}" for name, m in result.metrics.items() if m.signature]
    return "\n".join(lines)


def cmd_score(args: argparse.Namespace) -> int:
    model = ModelInfo(args.model_name or Path(args.predictions).stem, args.institution, args.url)
    metric_set = MetricSet(parse_metrics(args.metrics), args.device, args.batch_size, progress=not args.quiet,
                           judge=_judge(args), chunk=args.chunk, dtype=args.dtype)
    shard = parse_shard(args.shard) if args.shard else None
    result = score_file(Path(args.predictions), args.dataset, args.task, metric_set, Path(args.out), model,
                        args.split, args.dataset_name, args.resamples, args.seed, shard)
    _warn_all(result)
    if shard:
        written = shard_paths(Path(args.out), result.dataset, result.task, *shard)
        print(f"shard {shard[0]}/{shard[1]}: wrote {written[1]} (rexrank merge joins the shards)")
    else:
        print(format_result(result))
        print("wrote " + ", ".join(map(str, result_paths(Path(args.out), result.dataset, result.task))))
    return METRIC_SKIPPED if result.skipped else OK


def cmd_merge(args: argparse.Namespace) -> int:
    """Join the shards of a sharded `rexrank score` run into one result."""
    result = merge([Path(p) for p in args.shards], Path(args.out), args.resamples, args.seed)
    _warn_all(result)
    print(format_result(result))
    print("wrote " + ", ".join(map(str, result_paths(Path(args.out), result.dataset, result.task))))
    return METRIC_SKIPPED if result.skipped else OK


def cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    metrics = MetricSet(parse_metrics(args.metrics), args.device, args.batch_size, progress=False, judge=_judge(args),
                        dtype=args.dtype)
    results = []
    for key, card in demo.systems().items():
        model = ModelInfo(card["name"], card["institution"], card["url"])
        for task in TASKS:
            results.append(score_file(demo.predictions(key, task), str(demo.DATASET), task, metrics, out / key,
                                      model, dataset_name=demo.NAME))
            _warn_all(results[-1])
    for task in TASKS:
        print(format_board([r for r in results if r.task == task]))
    signatures = {name: m.signature for r in results for name, m in r.metrics.items()}
    print("\nsignatures:\n" + "\n".join(f"  {name}: {s}" for name, s in signatures.items()))
    skipped = {name: why for r in results for name, why in r.skipped.items()}
    if skipped:
        print(not_run_here(skipped))
    print(f"wrote {len(results)} results (JSON + per-study parquet) under {out}/")
    _demo_radrbench(out)
    return OK


def not_run_here(skipped: dict[str, str]) -> str:
    """What did not run, in as few lines as there are fixes: the metrics whose models are not installed, those
    whose weights are not downloaded (and the composites they take down), then any other reason, one line each."""
    install = [n for n, why in skipped.items() if "pip install" in why]
    download = [n for n, why in skipped.items() if "models download" in why and n not in install]
    lines = []
    if install:
        lines.append(f"not run here: {', '.join(install)}: the model metrics need torch and transformers: "
                     "pip install 'rexrank[models]'")
    if download:
        lines.append(f"not run here: {', '.join(download)} (weights not downloaded): `rexrank models download "
                     "--all` fetches them")
    lines += [f"not run here: {name}: {why}" for name, why in skipped.items() if name not in install + download]
    return "\n".join(lines)


def _demo_radrbench(out: Path) -> None:
    """RadRBench-CXR accuracy of the demo's two synthetic reasoning models (no weights, no judge: answers only)."""
    import tempfile

    from rexrank.demo import radrbench as rdemo
    from rexrank.radrbench.score import load_items, load_outputs, score_outputs, write_results

    with tempfile.TemporaryDirectory(prefix="rexrank-radrbench-demo-") as tmp:
        items = load_items(rdemo.dataset(Path(tmp) / "radrbench-cxr"))
    print(f"\n== RadRBench-CXR (synthetic demo items) · {len(items)} items · accuracy [95% CI] per task")
    scored = {key: score_outputs(items, load_outputs(rdemo.output_file(key))) for key in rdemo.MODELS}
    width = max(len(card["name"]) for card in rdemo.MODELS.values())
    rows = {key: s.rows.set_index(["source", "task"]) for key, s in scored.items()}
    groups = list(next(iter(rows.values())).index)
    for source, task in groups:
        label = "all" if task == "all" else f"{task} (all sources)" if source == "all" else f"{source}.{task}"
        cells = "  ".join(f"{rdemo.MODELS[k]['name']:<{width}} {r.loc[(source, task), 'accuracy']:.3f} "
                          f"[{r.loc[(source, task), 'low']:.3f}, {r.loc[(source, task), 'high']:.3f}]"
                          for k, r in rows.items())
        print(f"  {label:<30} {cells}")
    for key, s in scored.items():
        failures = json.loads(s.rows.iloc[-1]["failures"])
        print(f"  {rdemo.MODELS[key]['name']} answer failures: "
              + (", ".join(f"{k} {v}" for k, v in failures.items()) or "none"))
        write_results(out / key / "radrbench", rdemo.MODELS[key]["name"], s)
    print(f"signature: {next(iter(scored.values())).signature}")
    print(f"wrote RadRBench-CXR results under {out}/<model>/radrbench/")


def cmd_leaderboard(args: argparse.Namespace) -> int:
    try:
        from rexrank.board.app import main as launch
    except ImportError as err:  # gradio is the `space` extra
        print(f"rexrank: error: the leaderboard needs gradio ({err}); pip install 'rexrank[space]'", file=sys.stderr)
        return BAD_INPUT
    if args.results is not None:  # a repo that cannot be read fails now, not as an empty board in the browser
        from rexrank.board.sources import read_board

        try:
            read_board(args.results)
        except Exception as err:  # noqa: BLE001 - a missing folder, a Hub repo offline or without a board
            raise InputError(f"--results {args.results}: cannot read a board there ({type(err).__name__}: "
                             f"{str(err)[:300]}); give a results repo folder or a Hub dataset ORG/NAME") from None
    launch(args.results, args.port, demo=args.demo)
    return OK


def format_board(results: list[Result]) -> str:
    """Results of one dataset and task side by side, ranked as the leaderboard ranks them."""
    first = results[0]
    c = first.counts
    metrics = list(dict.fromkeys(name for r in results for name in r.metrics))
    rank_by = "radcliq_v1" if "radcliq_v1" in metrics else metrics[0]
    ranked = sorted(results, key=lambda r: -(r.metrics[rank_by].value or float("-inf")))
    width = max(len(r.model.name) for r in results)
    how = "1/RadCliQ-v1" if rank_by == "radcliq_v1" else f"{rank_by} (1/RadCliQ-v1, the board's ranking, not run here)"
    lines = [f"\n== {first.dataset} {first.split} · {first.task} · {c['scored']} studies "
             f"({c['dropped_by_task']} left out by the task) · ranked by {how}",
             (f"  {'model':<{width}}  " + "  ".join(f"{m:<24}" for m in metrics)).rstrip()]
    for r in ranked:
        cells = [f"{r.metrics[m].value:.3f} [{r.metrics[m].low:.3f}, {r.metrics[m].high:.3f}]" if m in r.metrics
                 else "—" for m in metrics]
        lines.append((f"  {r.model.name:<{width}}  " + "  ".join(f"{cell:<24}" for cell in cells)).rstrip())
    return "\n".join(lines)


def cmd_metrics(args: argparse.Namespace) -> int:
    for name in METRICS:
        metric = metric_class(name)
        needs = f" = f({', '.join(metric.needs)})" if name in COMPOSITES else ""
        dataset_value = "1 / mean over studies" if metric.statistic == "inverse_mean" else "mean over studies"
        absent = ", ".join(c for c in getattr(metric, "needs", ()) if c not in SCORERS)
        state = ("  [judged by an LLM: --judge-url/--judge-model (GREEN also a local model)]" if name in JUDGED
                 else "" if name in AVAILABLE else f"  [needs {absent}: not in rexrank {__version__} yet]")
        print(f"{name:<12} v{metric.version}{needs}; dataset value: {dataset_value}; "
              f"empty prediction: {metric.empty_prediction}{state}")
    return OK


def cmd_import(args: argparse.Namespace) -> int:
    from rexrank.official import imported_path, read_official_csv

    for path in args.files:
        rows = read_official_csv(path)
        for row in rows:
            if row.consistent is False:
                low, high = row.implied_inverse_radcliq or (float("nan"), float("nan"))
                _warn(f"{path}: {row.model.name} (rank {row.rank}): published 1/RadCliQ-v1 "
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


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired tests between two systems' per-study tables on the same split and task."""
    import pandas as pd

    from rexrank.compare import paired

    comparisons = paired(pd.read_parquet(args.a), pd.read_parquet(args.b), args.trials, args.seed,
                         (str(args.a), str(args.b)))
    print(f"A = {args.a}\nB = {args.b}\n{comparisons[0].of:,} paired studies; two-sided p-values; seed {args.seed}")
    print(f"  {'metric':<12} {'A - B':>9}  {'95% CI of A - B':<21} {'p (bootstrap)':>13} {'p (AR)':>8}")
    for c in comparisons:
        boot, ar = c.bootstrap, c.randomisation
        if boot is None:
            print(f"  {c.metric:<12} no study judged for both systems")
            continue
        note = f"  ({c.studies:,} studies judged for both)" if c.studies < c.of else ""
        print(f"  {c.title:<12} {boot.delta:+9.4f}  [{boot.low:+.4f}, {boot.high:+.4f}]  {boot.p_value:13.4f} "
              f"{ar.p_value:8.4f}{note}")
    return OK


JUDGE_MODELS = ("GREEN",)


def cmd_models(args: argparse.Namespace) -> int:
    """`models list`: each model and its pin; `models check`: where each resolves here, what is missing and what to
    run (nothing downloaded); `models download`: fetch into the HF cache."""
    if args.action == "list":
        width = max(len(spec.repo_id) for spec in MODELS.values()) + 14
        print(f"{'model':<18} {'repository @ pinned commit':<{width}} what")
        for key, spec in MODELS.items():
            print(_fit(f"{key:<18} {spec.repo_id + '@' + spec.revision[:12]:<{width}} {spec.what.split(' (')[0]}"))
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


def _model_override(text: str) -> tuple[str, str]:
    key, sep, path = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=PATH, got {text!r}")
    return key, path


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
        _warn(note)
    official = info.get("official")  # report test sets only
    if official and not official["matches"]:
        missing, extra = official.get("missing", []), official.get("extra", [])
        detail = "".join(f"; {len(ids):,} {what}: {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}"
                         for what, ids in (("missing", missing), ("extra", extra)) if ids)
        _warn(f"the official {args.name} {build.split} split has {official['official']:,} studies, this build "
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
        _warn(f"{len(scores.missing):,} item(s) have no output and are scored as empty outputs (wrong), e.g. "
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
        if judged.unparseable or judged.failed:
            _warn(f"RadRScore: {judged.unparseable} item(s) with an unreadable reply and {judged.failed} with a failed "
                  "call are left out of the means")
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
        _warn(f"RaTEScore of the free-text task (multi_no_option) not run here: {err}")
        return None
    if found is not None:
        rows, signature = found
        print("\nfree-text task (multi_no_option), RaTEScore of the answer against the reference answer")
        for _, r in rows.iterrows():
            print(f"{r['source']:<14} {r['items']:>6,} {r['ratescore']:>9.4f}  [{r['low']:.4f}, {r['high']:.4f}]")
        print(f"signature: {signature}")
    return found


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
    files, url = submit(card, Path(args.results) if args.results else None, args.repo, private, args.dry_run)
    print(f"submission {card.submission_id}: {len(files)} files, {sum(size for _, size in files):,} bytes")
    for path, size in files:
        print(f"  {path}  ({size:,} bytes)")
    print(f"dry run: nothing uploaded to {args.repo}" if url is None else f"pull request opened: {url}")
    return OK


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="rexrank", description=__doc__.split("\n")[0],
                                  epilog=__doc__.split("\n", 2)[2], formatter_class=argparse.RawTextHelpFormatter)
    top.add_argument("--version", action="version", version=f"rexrank {__version__}")
    commands = top.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a predictions file on a test split")
    score.add_argument("--predictions", required=True,
                       help="ReXrank submission .json (model_prediction per study), .jsonl or .csv "
                            "with study_id,prediction")
    score.add_argument("--dataset", required=True,
                       help="a folder of parquet (study_id, findings, impression), a ReXrank split .json, "
                            "a .jsonl, or a Hub dataset ORG/NAME")
    score.add_argument("--task", required=True, choices=TASKS)
    score.add_argument("--metrics", help=f"comma-separated from {','.join(METRICS)}; default all: "
                                         f"{','.join(AVAILABLE)} (judged metrics only when named)")
    score.add_argument("--out", default="rexrank-results", help="folder for the result JSON and per-study table")
    score.add_argument("--split", default="test")
    score.add_argument("--dataset-name", help="name recorded in the result (default: from --dataset)")
    score.add_argument("--model-name", help="default: the predictions file's name")
    score.add_argument("--institution", default="")
    score.add_argument("--url", default="")
    score.add_argument("--resamples", type=_whole(1), default=stats.RESAMPLES, help="bootstrap resamples for the CIs")
    score.add_argument("--seed", type=_whole(0), default=stats.SEED)
    score.add_argument("--quiet", action="store_true", help="no progress bars")
    score.add_argument("--shard", metavar="I/N", help="score the I-th (0-based) of N blocks of the studies and write a "
                                                      "shard for rexrank merge; auto: RANK/WORLD_SIZE of torchrun")
    _runtime_options(score)
    score.add_argument("--chunk", type=_whole(1), default=CHUNK, metavar="N",
                         help=f"studies scored at once (default {CHUNK}): memory grows with it, not with the split; "
                              "each finished chunk is kept under OUT/.partial/, so a killed run continues")
    score.set_defaults(run=cmd_score)

    build = commands.add_parser("build-dataset", help="build a test set from your own download as a Hub dataset",
                                formatter_class=argparse.RawTextHelpFormatter, epilog=_sources_help())
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
    radr.add_argument("--out", default="rexrank-results")
    radr.add_argument("--model-name", help="default: the predictions file's name")
    radr.add_argument("--resamples", type=_whole(1), default=stats.RESAMPLES)
    radr.add_argument("--seed", type=_whole(0), default=stats.SEED)
    _runtime_options(radr)  # the judge options: RadRScore runs when a judge model is given
    radr.set_defaults(run=cmd_score_radrbench)

    join = commands.add_parser("merge", help="join the shards of a sharded rexrank score run into one result")
    join.add_argument("shards", nargs="+", help="the shard tables (<dataset>.<task>.shard-I-of-N.parquet)")
    join.add_argument("--out", default="rexrank-results")
    join.add_argument("--resamples", type=_whole(1), default=stats.RESAMPLES, help="bootstrap resamples for the CIs")
    join.add_argument("--seed", type=_whole(0), default=stats.SEED)
    join.set_defaults(run=cmd_merge)

    send = commands.add_parser("submit", help="open a pull request with your results on the leaderboard's results "
                                              "repo")
    send.add_argument("--results", help="the --out folder of rexrank score (results, per-study tables, predictions)")
    send.add_argument("--name", required=True, help="the model's name on the board")
    send.add_argument("--institution", default="")
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
    send.add_argument("--repo", default=os.environ.get("REXRANK_RESULTS_REPO", "rexrank/results"),
                      help="the results repo, a Hub dataset (default REXRANK_RESULTS_REPO or rexrank/results)")
    send.add_argument("--dry-run", action="store_true", help="check and list what would be uploaded")
    send.set_defaults(run=cmd_submit)

    run_demo = commands.add_parser("demo", help="score the embedded synthetic demo systems")
    run_demo.add_argument("--out", default="rexrank-results")
    run_demo.add_argument("--metrics", help="comma-separated, default all")
    _runtime_options(run_demo)
    run_demo.set_defaults(run=cmd_demo)

    board = commands.add_parser("leaderboard", help="open the leaderboard app (the Space) on this machine")
    shown = board.add_mutually_exclusive_group()
    shown.add_argument("--results", metavar="PATH_OR_ID",
                       help="a results repo: a local folder holding leaderboard.parquet or a Hub dataset ORG/NAME "
                            "(default REXRANK_RESULTS, else the official ReXrank tables shipped with rexrank, as "
                            "published in 2025-09, no network)")
    shown.add_argument("--demo", action="store_true", help="the embedded synthetic demo board instead")
    board.add_argument("--port", type=int, help="default 7860 (GRADIO_SERVER_PORT)")
    board.set_defaults(run=cmd_leaderboard)

    weights = commands.add_parser("models", help="list the models and their pins, check where each resolves here, "
                                                 "or download them")
    weights.add_argument("action", choices=("list", "check", "download"))
    weights.add_argument("keys", nargs="*", metavar="MODEL", help=", ".join(k.lower() for k in MODELS))
    weights.add_argument("--all", action="store_true", help="download every model but the judges (name green to "
                                                             "get GREEN's 13.5 GB)")
    weights.set_defaults(run=cmd_models)

    listing = commands.add_parser("metrics", help="list the metrics and what each gives an empty prediction")
    listing.set_defaults(run=cmd_metrics)

    _publish_commands(commands)

    compare = commands.add_parser("compare", help="paired bootstrap and approximate randomisation between two "
                                  "systems' per-study tables")
    compare.add_argument("a", help="system A's <dataset>.<task>.per_study.parquet")
    compare.add_argument("b", help="system B's, same split and task")
    compare.add_argument("--trials", type=_whole(1), default=stats.TRIALS, help="resamples / randomisations")
    compare.add_argument("--seed", type=_whole(0), default=stats.SEED)
    compare.set_defaults(run=cmd_compare)

    official = commands.add_parser("import-rexrank-csv", help="read official ReXrank leaderboard CSVs, "
                                   "checking each row's 1/RadCliQ-v1 against its components")
    official.add_argument("files", nargs="+", metavar="FILE",
                          help="findings_result_<dataset>.csv or result_<dataset>.csv")
    official.add_argument("--json", action="store_true", help="one JSON object per row")
    official.add_argument("--out", metavar="REPO", help="also write each row as an imported result into the results "
                          "repo folder REPO (REPO/imported/<dataset>.<task>.<model>.json), where the board reads it")
    official.add_argument("--as-of", type=_year_month, metavar="YYYY-MM",
                          help="when the tables were published: stamped on each imported result")
    official.set_defaults(run=cmd_import)
    return top


def _runtime_options(command: argparse.ArgumentParser) -> None:
    command.add_argument("--model", type=_model_override, action="append", default=[], metavar="KEY=PATH",
                         help="a local copy of a model's weights (also REXRANK_MODEL_<KEY>); KEY one of "
                              + ", ".join(MODELS))
    command.add_argument("--device", help="torch device for model metrics (default: cuda if present, else cpu)")
    command.add_argument("--batch-size", type=_whole(1), help="texts per forward pass (default: fitted to the free "
                         "GPU memory on CUDA, 32 on the CPU; halved on out-of-memory)")
    command.add_argument("--dtype", choices=PRECISIONS, default="fp32",
                         help="precision of the model metrics' matrix products (default fp32, as the reference "
                              "implementations; bf16 and fp16 run under autocast, faster on a GPU, and are recorded "
                              "in the signature: the maintainers rank fp32 numbers only)")
    judge = command.add_argument_group("LLM-judged metrics (green, fineradscore): an OpenAI-compatible endpoint; "
                                       "GREEN also runs its local model (--model GREEN=PATH)")
    judge.add_argument("--judge-url", help="e.g. http://localhost:8000/v1 (also REXRANK_JUDGE_URL); key in "
                                           "OPENAI_API_KEY")
    judge.add_argument("--judge-model", help="the model name the endpoint serves (also REXRANK_JUDGE_MODEL)")
    judge.add_argument("--judge-concurrency", type=_concurrency, default=8, metavar="N|auto",
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


def _sources_help() -> str:
    import textwrap

    from rexrank.data.catalog import BUILDERS

    lines = ["sources (for the report test sets, ReXrank's split JSON works too):"]
    for name, chosen in BUILDERS.items():
        if chosen.originals_help:
            lines += textwrap.wrap(chosen.originals_help, 100, initial_indent=f"  {name}: ",
                                   subsequent_indent=" " * (len(name) + 4), break_on_hyphens=False)
    return "\n".join(lines)


def _whole(minimum: int):
    """An argparse type: a whole number from `minimum` (argparse reports the option and this message, exit 2)."""
    def whole(text: str) -> int:
        if not text.strip().lstrip("-").isdigit() or len(text) > 12 or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number from {minimum}, got {text!r}")
        return int(text)
    return whole


def _year_month(text: str) -> str:
    import re

    if not re.fullmatch(r"(19|20)\d\d-(0[1-9]|1[0-2])", text):
        raise argparse.ArgumentTypeError(f"expected a year and month such as 2025-09, got {text!r}")
    return text


def _concurrency(text: str) -> int | str:
    if text == "auto":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from 1, or auto")
    return int(text)


def _judge(args: argparse.Namespace) -> dict:
    return {"judge_url": args.judge_url, "judge_model": args.judge_model, "concurrency": args.judge_concurrency,
            "allow_endpoints": args.allow_endpoint, "fineradscore_shots": args.fineradscore_shots,
            "green_trust_remote_code": args.green_trust_remote_code}


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


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        for key, path in getattr(args, "model", []):
            set_override(key, path)
        return args.run(args)
    except (InputError, OSError) as err:
        print(f"rexrank: error: {err}", file=sys.stderr)
        return BAD_INPUT
    except ModelUnavailable as err:  # an override naming an unknown model
        print(f"rexrank: error: {err}", file=sys.stderr)
        return BAD_INPUT
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130  # 128 + SIGINT, as a shell reports it
    finally:
        clear_overrides()  # they belong to this invocation only


def run() -> None:
    """The `rexrank` command. After Ctrl-C (everything written is whole by then) it exits at once: a judge worker
    thread still blocked in a request must not hold the process until that request's deadline."""
    code = main()
    if code == 130:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
