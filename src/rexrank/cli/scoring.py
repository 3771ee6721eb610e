"""Scoring: `score`, `merge`, `compare`, `metrics` and `demo`, and how their results print."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from rexrank import __version__, demo, stats
from rexrank.cli.options import (
    METRIC_SKIPPED,
    OK,
    judge_options,
    metric_options,
    out_folder,
    resampling_options,
    runtime_options,
    warn,
    warn_all,
    whole,
)
from rexrank.errors import InputError
from rexrank.reports import TASKS
from rexrank.scorers import (
    ALIASES,
    AVAILABLE,
    METRICS,
    RANK_BY,
    aliases,
    needs_here,
    parse_metrics,
    shown,
    spec,
)
from rexrank.scorers.base import CHUNK

if TYPE_CHECKING:
    from rexrank.results import Result


def add(commands) -> None:
    score = commands.add_parser("score", help="score a predictions file on a test split")
    score.add_argument("--predictions", required=True,
                       help="ReXrank submission .json (model_prediction per study), .jsonl or .csv "
                            "with study_id,prediction")
    score.add_argument("--dataset", required=True,
                       help="a folder of parquet (study_id, findings, impression), a ReXrank split .json, "
                            "a .jsonl, or a Hub dataset ORG/NAME")
    score.add_argument("--task", required=True, choices=TASKS,
                       help="what the predictions are scored against: the findings section, or "
                            "'Findings: ... Impression: ...' (docs/metrics.md §0)")
    score.add_argument("--metrics", help=f"comma-separated from {','.join(METRICS)} (or their other names: "
                                         f"{','.join(ALIASES)}); default all: {','.join(AVAILABLE)} (judged "
                                         "metrics only when named)")
    score.add_argument("--ignore-extra", action="store_true",
                       help="leave predictions for studies the split does not have aside, counted and said (a model's "
                            "whole test-set output scored on ReXrank's split), instead of refusing the file")
    score.add_argument("--partial", action="store_true",
                       help="score only the split's studies that have a prediction (a development subset): the result "
                            "is marked partial, is not comparable with the board's numbers and cannot be submitted")
    score.add_argument("--out", default="rexrank-results", type=out_folder,
                       help="folder for the result JSONs and per-study tables (several models' results may share it; "
                            "a rerun of a model keeps what it computed before and this run does not, when both "
                            "scored the same texts)")
    score.add_argument("--replace", action="store_true",
                       help="replace the model's earlier result in --out, which a rerun on other predictions, "
                            "references or settings refuses to do by itself")
    score.add_argument("--split", help="the split (default: what the data says: the records' split field, the "
                                       "folder's file names, an official split's study ids; else test); one that "
                                       "contradicts them is refused")
    score.add_argument("--dataset-name", help="name recorded in the result (default: the official dataset whose "
                                              "split its study ids are, else from --dataset); one that contradicts "
                                              "the ids is refused")
    score.add_argument("--model-name", help="the model's name in the result and its file names (default: the "
                                            "predictions file's name less a .findings or .findings_impression ending)")
    score.add_argument("--institution", default="", help="recorded in the result, shown on the board")
    score.add_argument("--url", default="", help="the model's page (code or weights), recorded in the result")
    resampling_options(score)
    score.add_argument("--quiet", action="store_true", help="no progress bars")
    score.add_argument("--shard", metavar="I/N", help="score the I-th (0-based) of N blocks of the studies and write a "
                                                      "shard for rexrank merge; auto: RANK/WORLD_SIZE of torchrun")
    runtime_options(score)
    score.add_argument("--chunk", type=whole(1), default=CHUNK, metavar="N",
                       help=f"studies scored at once (default {CHUNK}): memory grows with it, not with the split; "
                            "each finished chunk is kept under OUT/.partial/, so a killed run continues")
    score.set_defaults(run=cmd_score)

    join = commands.add_parser("merge", help="join the shards of a sharded rexrank score run into one result")
    join.add_argument("shards", nargs="+", help="the shard tables (<dataset>.<task>.<model>.shard-I-of-N.parquet)")
    join.add_argument("--out", default="rexrank-results", type=out_folder,
                      help="folder for the merged result JSON and per-study table")
    join.add_argument("--replace", action="store_true", help="replace the model's earlier result in --out (as "
                                                             "rexrank score --replace)")
    resampling_options(join)
    join.set_defaults(run=cmd_merge)

    compare = commands.add_parser("compare", help="paired bootstrap and approximate randomisation between two "
                                  "systems' per-study tables")
    compare.add_argument("a", help="system A: its result JSON, its per-study table (.per_study.parquet), an --out "
                                   "folder holding its one result, or its model name in --results")
    compare.add_argument("b", help="system B, the same ways, on the same split and task (a model name is looked "
                                   "for on A's dataset and task)")
    compare.add_argument("--results", default="rexrank-results", metavar="DIR",
                         help="the rexrank score --out folder where model names are looked for (default %(default)s)")
    compare.add_argument("--dataset", metavar="NAME", help="which dataset's result, when a model has several")
    compare.add_argument("--task", choices=TASKS, help="which task's result, when a model has both")
    resampling_options(compare, trials=True)
    compare.set_defaults(run=cmd_compare)

    listing = commands.add_parser("metrics", help="list the metrics, what each gives an empty prediction, and whether "
                                                  "each can run on this machine now and what it needs")
    listing.set_defaults(run=cmd_metrics)

    run_demo = commands.add_parser("demo", help="score the embedded synthetic demo systems")
    run_demo.add_argument("--out", default="rexrank-results", type=out_folder,
                          help="folder for the demo systems' results (a rerun replaces them)")
    run_demo.add_argument("--metrics", help="comma-separated, default all")
    runtime_options(run_demo)
    run_demo.set_defaults(run=cmd_demo)


def _show(value) -> str:
    """An extra as one line: floats to 4 places, counts as they are, nested groups in parentheses."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {f'({_show(v)})' if isinstance(v, dict) else _show(v)}" for k, v in value.items())
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def format_result(result: Result) -> str:
    c = result.counts
    lines = [f"{result.model.name} · {result.dataset} {result.split} · {result.task} · "
             f"{c.get('scored', 0):,} studies scored, {c.get('dropped_by_task', 0):,} left out by the task"
             + (f", {c['extra_predictions']:,} predictions for other studies left aside" if c.get("extra_predictions")
                else "")]
    if c.get("unpredicted"):
        lines.append(f"  PARTIAL: {c['unpredicted']:,} of the split's studies have no prediction (--partial): these "
                     "numbers are not comparable with the board's, and rexrank submit refuses them")
    lines.append(f"  {'metric':<12} {'value':>8}  {'95% CI':<19} {'n':>6}")
    for name, m in result.metrics.items():
        shown = "1/mean" if m.statistic == "inverse_mean" else ""
        value = "n/a" if m.value is None else f"{m.value:.4f}"
        ci = "" if m.low is None or m.high is None else f"[{m.low:.4f}, {m.high:.4f}]"
        flag = "  (mean <= 0: inverse meaningless)" if m.non_positive_mean else ""
        lines.append(f"  {name:<12} {value:>8}  {ci:<19} {m.n or '':>6} {shown}{flag}".rstrip())
    if result.skipped:
        lines += [not_run_here(result.skipped, indent="  "),
                  "  (the reasons in full: the result JSON's skipped_metrics)"]
    for name, values in result.extras.items():
        lines.append(f"  {name}: {_show(values)}")
    lines += [f"  {name}: {m.signature}" for name, m in result.metrics.items() if m.signature]
    return "\n".join(lines)


def cmd_score(args: argparse.Namespace) -> int:
    from rexrank.result_set import score_file
    from rexrank.results import ModelInfo, default_model_name, result_paths
    from rexrank.scorecard import MetricSet
    from rexrank.shards import parse_shard, shard_paths

    model = ModelInfo(args.model_name or default_model_name(Path(args.predictions)), args.institution, args.url)
    metric_set = MetricSet(parse_metrics(args.metrics), args.device, args.batch_size, progress=not args.quiet,
                           judge=judge_options(args), chunk=args.chunk, dtype=args.dtype,
                           options=metric_options(args.option))
    shard = parse_shard(args.shard) if args.shard else None
    result = score_file(Path(args.predictions), args.dataset, args.task, metric_set, Path(args.out), model,
                        args.split, args.dataset_name, args.resamples, args.seed, shard, args.ignore_extra,
                        args.partial, args.replace)
    warn_all(result)
    if shard:
        written = shard_paths(Path(args.out), result.dataset, result.task, result.model.name, *shard)
        print(f"shard {shard[0]}/{shard[1]}: wrote {written[1]} (rexrank merge joins the shards)")
    else:
        print(format_result(result))
        print("wrote " + ", ".join(map(str, result_paths(Path(args.out), result.dataset, result.task,
                                                         result.model.name))))
    return METRIC_SKIPPED if result.skipped else OK


def cmd_merge(args: argparse.Namespace) -> int:
    """Join the shards of a sharded `rexrank score` run into one result."""
    from rexrank.result_set import merge
    from rexrank.results import result_paths

    result = merge([Path(p) for p in args.shards], Path(args.out), args.resamples, args.seed, args.replace)
    warn_all(result)
    print(format_result(result))
    print("wrote " + ", ".join(map(str, result_paths(Path(args.out), result.dataset, result.task, result.model.name))))
    return METRIC_SKIPPED if result.skipped else OK


def cmd_compare(args: argparse.Namespace) -> int:
    """Paired tests between two systems' per-study tables on the same split and task: tables of other test sets or
    tasks are refused, and metrics made otherwise (signatures differ) are left out, in one line each."""
    from rexrank import per_study
    from rexrank.significance import alike, paired

    table_a = _per_study_table(args.a, args.results, args.dataset, args.task)
    made = per_study.read(table_a)[1]
    table_b = _per_study_table(args.b, args.results, args.dataset or (made.dataset if made else None),
                               args.task or (made.task if made else None))
    names = (str(args.a), str(args.b))
    (a, made_a), (b, made_b) = per_study.read(table_a), per_study.read(table_b)
    lacking = [f"{m} ({names[0] if spec(m).carried_by(a.columns) else names[1]} only)" for m in METRICS
               if spec(m).carried_by(a.columns) != spec(m).carried_by(b.columns)]
    if lacking:
        warn(f"not compared, scored for one system only: {', '.join(lacking)}")
    same = alike(made_a, made_b, names)
    if same.unchecked:
        warn(same.unchecked)
    if same.differ:
        first, (key_a, key_b) = next(iter(same.differ.items()))
        warn(f"not compared, made otherwise in A than in B (their signatures differ): {', '.join(same.differ)} "
             f"(e.g. {first}: A {key_a}, B {key_b})")
        if not same.metrics:
            raise InputError(f"{names[0]} and {names[1]}: no metric made alike in both (signatures differ: "
                             f"{', '.join(same.differ)}): nothing to compare")
    comparisons = paired(a, b, args.trials, args.seed, names, same.metrics)
    where = f" · {made_a.dataset} {made_a.split} · {made_a.task}" if made_a else ""
    print(f"A = {table_a}\nB = {table_b}\n{comparisons[0].of:,} paired studies{where}; two-sided p-values; "
          f"seed {args.seed}")
    print(f"  {'metric':<12} {'A - B':>9}  {'95% CI of A - B':<21} {'p (bootstrap)':>13} {'p (AR)':>8}")
    for c in comparisons:
        boot, ar = c.bootstrap, c.randomisation
        if boot is None:
            print(f"  {c.metric:<12} no study judged for both systems")
            continue
        note = f"  ({c.studies:,} studies judged for both)" if c.studies < c.of else ""
        print(f"  {c.title:<12} {boot.delta:+9.4f}  [{boot.low:+.4f}, {boot.high:+.4f}]  {boot.p_text:>13} "
              f"{ar.p_text:>8}{note}")
    return OK


def _per_study_table(given: str, results: str, dataset: str | None, task: str | None) -> Path:
    """A system's per-study table from what the user has: the table itself, a result JSON or an --out folder holding
    one (its table beside it), or a model's name in `results`."""
    from rexrank.results import companions
    from rexrank.studies import find

    path = Path(given)
    if path.is_file() and path.suffix.lower() == ".parquet":
        return path
    if not path.exists() and (path.suffix or "/" in given):
        raise InputError(f"{given}: no such per-study table, result or --out folder")
    found = find(path if path.exists() else Path(results), dataset, task, None if path.exists() else given)
    table = companions(found)[0]
    if not table.is_file():
        raise InputError(f"{found}: its per-study table {table.name} is not beside it")
    return table


def cmd_metrics(args: argparse.Namespace) -> int:
    width = max(map(len, METRICS))
    for name in METRICS:
        metric = spec(name)  # everything printed is the spec's
        needs = f" = f({', '.join(metric.needs)})" if metric.needs else ""
        dataset_value = stats.WORDS[metric.statistic]
        absent = ", ".join(c for c in metric.needs if c not in AVAILABLE)
        state = ("  [judged by an LLM: --judge-url/--judge-model (GREEN also a local model)]" if metric.judged
                 else "" if name in AVAILABLE else f"  [needs {absent}: not in rexrank {__version__} yet]")
        also = f"; also named {', '.join(aliases(name))}" if aliases(name) else ""
        also += f"\n{'':<{width}}   convention: {metric.convention}" if metric.convention else ""
        options = "; options: " + ", ".join(f"{k}={v!r}" for k, v in metric.options.items()) if metric.options else ""
        print(f"{name:<{width}} v{metric.version}{needs}; dataset value: {dataset_value}; "
              f"empty prediction: {metric.empty_prediction}{options}{also}{state}")
    print("\non this machine now (nothing downloaded or loaded to tell; `rexrank models check` says where each model "
          "resolves):")
    lacking = {name: needs_here(name) for name in METRICS}
    for name, needs_now in lacking.items():
        print(f"  {name:<{width}} " + ("runs here" if not needs_now else "not here: needs " + "; ".join(needs_now)))
    if any(lacking[name] for name in METRICS if spec(name).per_text):
        print("`rexrank models download --all` fetches the weights of every metric but the judges'")
    return OK


def cmd_demo(args: argparse.Namespace) -> int:
    from rexrank.result_set import score_file
    from rexrank.results import ModelInfo
    from rexrank.scorecard import MetricSet

    out = Path(args.out)
    metrics = MetricSet(parse_metrics(args.metrics), args.device, args.batch_size, progress=False,
                        judge=judge_options(args), dtype=args.dtype)
    results = []
    for key, card in demo.systems().items():
        model = ModelInfo(card["name"], card["institution"], card["url"])
        for task in TASKS:
            results.append(score_file(demo.predictions(key, task), str(demo.DATASET), task, metrics, out / key,
                                      model, dataset_name=demo.NAME, replace_earlier=True))
            warn_all(results[-1])
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


def format_board(results: list[Result]) -> str:
    """Results of one dataset and task side by side, ranked as the leaderboard ranks them."""
    first = results[0]
    c = first.counts
    metrics = list(dict.fromkeys(name for r in results for name in r.metrics))
    rank_by = RANK_BY if RANK_BY in metrics else metrics[0]
    ranked = sorted(results, key=lambda r: -(r.metrics[rank_by].value or float("-inf")))
    width = max(len(r.model.name) for r in results)
    board = shown(RANK_BY)
    how = board if rank_by == RANK_BY else f"{rank_by} ({board}, the board's ranking, not run here)"
    lines = [f"\n== {first.dataset} {first.split} · {first.task} · {c['scored']} studies "
             f"({c['dropped_by_task']} left out by the task) · ranked by {how}",
             (f"  {'model':<{width}}  " + "  ".join(f"{m:<24}" for m in metrics)).rstrip()]
    for r in ranked:
        cells = [f"{r.metrics[m].value:.3f} [{r.metrics[m].low:.3f}, {r.metrics[m].high:.3f}]" if m in r.metrics
                 else "—" for m in metrics]
        lines.append((f"  {r.model.name:<{width}}  " + "  ".join(f"{cell:<24}" for cell in cells)).rstrip())
    return "\n".join(lines)


DOWNLOAD = re.compile(r"`rexrank models download (\w+)`")  # how a missing model's reason names its fix
OTHER_REASON = 160  # characters of any other reason shown; the whole of it stays in the result JSON


def not_run_here(skipped: dict[str, str], indent: str = "") -> str:
    """What did not run, in as few lines as there are fixes: the metrics whose models are not installed; those whose
    weights are not here, in one line with the one command that fetches them all, then one line per missing model
    with the metrics it takes down (composites included); those that need an LLM judge, in one line with the options
    that give one; then any other reason, one line each, cut short (the full reasons are the result JSON's
    `skipped_metrics`)."""
    from rexrank.models import MODELS

    install = [n for n, why in skipped.items() if "pip install" in why]
    models: dict[str, list[str]] = {}
    for name, why in skipped.items():
        if name not in install:
            for key in DOWNLOAD.findall(why):
                models.setdefault(key, []).append(name)
    download = [n for n in skipped if n not in install and any(n in names for names in models.values())]
    unjudged = [n for n, why in skipped.items() if n not in install + download and "--judge-url" in why]
    lines = []
    if install:
        lines.append(f"not run here: {', '.join(install)}: the model metrics need torch and transformers: "
                     "pip install 'rexrank[models]'")
    if download:
        lines.append(f"not run here: {', '.join(download)} (weights not downloaded): `rexrank models download "
                     "--all` fetches them")
        for key, names in models.items():
            what = MODELS[key.upper()].what.split(" (")[0] if key.upper() in MODELS else key
            lines.append(f"  {key}: {what}, for {', '.join(dict.fromkeys(names))}")
    if unjudged:
        lines.append(f"not run here: {', '.join(unjudged)} (no LLM judge): give --judge-url URL --judge-model NAME "
                     "(or REXRANK_JUDGE_URL and REXRANK_JUDGE_MODEL; the key in OPENAI_API_KEY)")
    for name, why in skipped.items():
        if name in install + download + unjudged:
            continue
        if spec(name).needs and why.startswith("needs "):  # its parts' reasons: their own lines
            why = why.split(" (")[0]
        short = why if len(why) <= OTHER_REASON else why[:OTHER_REASON - 1] + "\u2026 (in full in the result JSON)"
        lines.append(f"not run here: {name}: {short}")
    return "\n".join(indent + line for line in lines)


def _demo_radrbench(out: Path) -> None:
    """RadRBench-CXR accuracy of the demo's two synthetic reasoning models (no weights, no judge: answers only)."""
    import tempfile

    from rexrank.demo import radrbench as rdemo
    from rexrank.radrbench.outputs import load_outputs
    from rexrank.radrbench.score import load_items, score_outputs, write_results

    with tempfile.TemporaryDirectory(prefix="rexrank-radrbench-demo-") as tmp:
        items = load_items(rdemo.dataset(Path(tmp) / "radrbench-cxr"))
    print(f"\n== RadRBench-CXR (synthetic demo items) · {len(items)} items · accuracy [95% CI] per task")
    scored = {key: score_outputs(items, load_outputs(rdemo.output_file(key), items)) for key in rdemo.MODELS}
    width = max(len(card["name"]) for card in rdemo.MODELS.values())
    rows = {key: s.rows.set_index(["source", "task"]) for key, s in scored.items()}
    groups = list(next(iter(rows.values())).index)
    for source, task in groups:
        label = "all (options)" if task == "all" else f"{task} (all sources)" if source == "all" else f"{source}.{task}"
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
