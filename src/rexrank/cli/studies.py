"""`rexrank studies`: why a model scored low, study by study, from what `rexrank score --out` wrote."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from rexrank.cli.options import OK, whole
from rexrank.errors import InputError
from rexrank.reports import TASKS

TEXT = 600  # characters of a report shown; a longer one is cut, marked


def add(commands) -> None:
    look = commands.add_parser(
        "studies", help="the studies behind a score: the lowest by a metric, reference and prediction side by side, "
                        "where the metrics disagree, where two models differ; --plot draws each metric's distribution")
    look.add_argument("out", metavar="OUT", help="a rexrank score --out folder, or one result JSON in it")
    look.add_argument("--dataset", metavar="SPLIT",
                      help="the split, as rexrank score --dataset takes it: its references are shown beside the "
                           "predictions and its result chosen (or a dataset's name, to choose without references)")
    look.add_argument("--split", help="as rexrank score --split")
    look.add_argument("--task", choices=TASKS, help="which task's result, when OUT holds both")
    look.add_argument("--model-name", metavar="NAME", help="which model's result, when OUT holds several")
    look.add_argument("--worst", type=whole(1), default=10, metavar="N", help="studies shown per list (default 10)")
    look.add_argument("--by", metavar="METRIC", help="the metric the lowest studies are chosen by (default the "
                                                     "board's, radcliq_v1, when scored; else the first)")
    look.add_argument("--vs", metavar="OTHER", help="another model's result (a JSON, an --out folder, or a model "
                                                     "name in OUT): the studies where the two differ most")
    look.add_argument("--plot", metavar="FILE", help="write each metric's per-study distribution (with --vs, both "
                                                      "models') to FILE: .png, .pdf or .svg, for a paper")
    look.set_defaults(run=cmd_studies)


def cmd_studies(args: argparse.Namespace) -> int:
    from rexrank import studies
    from rexrank.scorers import RANK_BY, canonical

    figure = _plotter(args.plot) if args.plot else None  # every refusal before the first line of output
    split, dataset = _split(args)
    scored = _scored(args.out, dataset, args.task, args.model_name, split)
    by = canonical(args.by) if args.by else next((m for m in (RANK_BY,) if m in scored.metrics),
                                                 (scored.metrics or ["bleu2"])[0])
    studies.need(scored, by)
    other = _other(args, scored, split) if args.vs else None
    print(f"{scored.title} · {len(scored.table):,} studies" + (f" (references: {args.dataset})" if split else
          " (give --dataset SPLIT, the split it was scored on, to see the references beside)"))
    worst = studies.worst(scored, by, args.worst)
    direction = "highest, lower is better" if studies.lower_is_better(by) else "lowest"
    print(f"\nthe {len(worst):,} {direction} by {by}:")
    _studies(worst, scored.metrics)
    if len(scored.metrics) > 1:
        spread = studies.disagreements(scored, args.worst)
        print(f"\nthe {len(spread):,} studies where the metrics disagree most (each metric's percentile among these "
              "studies, better higher: the best minus the worst):")
        _studies(spread, scored.metrics, extra="spread")
    if other is not None:
        apart = studies.versus(scored, other, by, args.worst)
        print(f"\nthe {len(apart):,} studies where {scored.result.model.name} (A) and {other.result.model.name} (B) "
              f"differ most by {by} (better: how much better A is):")
        _studies(apart, scored.metrics, extra="better", b=True)
    if figure:
        _plot(figure, args.plot, scored, other)
    return OK


def _split(args: argparse.Namespace):
    """The split `--dataset` names (loaded, for its references) and the dataset name to choose by; a bare name of a
    result's dataset chooses only."""
    if not args.dataset:
        return None, None
    from rexrank.data import load_split
    from rexrank.results import Result, result_files

    out = Path(args.out)
    named = {Result.read(p).dataset for p in result_files(out)} if out.is_dir() else set()
    if args.dataset in named and not Path(args.dataset).exists():
        return None, args.dataset
    split = load_split(args.dataset, args.split)
    return split, split.dataset


def _scored(where, dataset, task, model, split):
    from rexrank import studies
    from rexrank.results import Result

    path = studies.find(where, dataset, task, model)
    references = split.references(Result.read(path).task).references if split is not None else None
    return studies.load(path, references)


def _other(args: argparse.Namespace, scored, split):
    """--vs: a result JSON or folder of the same dataset and task, else a model's name in OUT."""
    r = scored.result
    if Path(args.vs).exists():
        return _scored(args.vs, r.dataset, r.task, None, split)
    return _scored(args.out, r.dataset, r.task, args.vs, split)


def _studies(rows, metrics: list[str], extra: str | None = None, b: bool = False) -> None:
    for n, row in enumerate(rows.itertuples(index=False), 1):
        row = row._asdict()
        scores = " · ".join(f"{m} {row[m]:.4f}" + (f" | B {row[f'{m}_b']:.4f}" if b else "") for m in metrics)
        lead = f"{extra} {row[extra]:+.3f} · " if extra else ""
        print(f"  {n:>2}. {row['study_id']}  {lead}{scores}")
        for label, key in (("reference", "reference"), ("prediction", "prediction"), ("B's prediction",
                                                                                   "prediction_b")):
            if key in row and (b or key != "prediction_b"):
                print(_wrapped(f"{label}:", row[key]))


def _wrapped(label: str, text) -> str:
    text = "(none)" if not isinstance(text, str) else text if len(text) <= TEXT else text[:TEXT - 1] + "…"
    return textwrap.fill(text or '""', 116, initial_indent=f"      {label:<15} ", subsequent_indent=" " * 22)


def _plotter(file: str):
    """What draws --plot's figure, once FILE is known to be one it can write."""
    if Path(file).suffix.lower() not in (".png", ".pdf", ".svg"):
        raise InputError(f"--plot {file}: give a .png, .pdf or .svg file")
    try:
        from rexrank.board.figures import distribution_figure
    except ImportError as err:
        raise InputError(f"--plot needs matplotlib ({err.name} is not installed): pip install matplotlib") from None
    return distribution_figure


def _plot(distribution_figure, file: str, scored, other) -> None:
    tables = [(scored.result.model.name, scored.table)] + ([(other.result.model.name, other.table)] if other else [])
    figure = distribution_figure(tables, scored.metrics, f"{scored.title}: per-study scores")
    figure.savefig(file, dpi=200)
    print(f"\nwrote {file}")
