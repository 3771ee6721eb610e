"""The Arena's commands: `arena-rank` (ratings from the readers' votes) and `arena-agreement` (each metric against
the votes)."""

from __future__ import annotations

import argparse

from rexrank.cli.options import OK, whole
from rexrank.errors import InputError
from rexrank.reports import TASKS


def add(commands) -> None:
    rank = commands.add_parser("arena-rank", help="Bradley–Terry ratings of the models from the Arena's votes, with "
                                                  "bootstrap 95%% CIs, rank ranges and position bias")
    _common(rank)
    rank.add_argument("--min-votes", type=whole(1), default=None, metavar="N",
                      help="votes a model needs to be ranked (default 30); fewer: listed unranked")
    rank.set_defaults(run=cmd_rank)

    agree = commands.add_parser("arena-agreement", help="how often each metric prefers the report readers chose, "
                                                        "and Kendall's tau-b between its model order and theirs")
    _common(agree)
    agree.add_argument("--results", required=True, metavar="DIR",
                       help="a rexrank score --out folder holding the voted models' results and per-study tables")
    agree.set_defaults(run=cmd_agreement)


def _common(command: argparse.ArgumentParser) -> None:
    from rexrank.arena.ranking import RESAMPLES, SEED

    command.add_argument("votes", metavar="VOTES", help="a votes JSONL file, or a folder of them (the votes repo)")
    command.add_argument("--dataset", help="only the votes on this dataset")
    command.add_argument("--task", choices=TASKS, help="only the votes on this task")
    command.add_argument("--both-bad", choices=("tie", "drop"), default="tie",
                         help="a 'both bad' vote counts as a tie (default, as FastChat counts it) or is left out")
    command.add_argument("--resamples", type=whole(1), default=RESAMPLES,
                         help=f"bootstrap resamples for the 95%% CIs (default {RESAMPLES:,})")
    command.add_argument("--seed", type=whole(0), default=SEED, help=f"the resampling's seed (default {SEED})")


def _counted(args: argparse.Namespace):
    from rexrank.arena.limits import counted
    from rexrank.arena.votes import read_votes

    votes = read_votes(args.votes)
    kept = [v for v in votes if args.dataset in (None, v.dataset) and args.task in (None, v.task)]
    if not kept:
        raise InputError(f"{args.votes}: no vote" + (" on " + " ".join(filter(None, (args.dataset, args.task)))
                                                     if args.dataset or args.task else ""))
    if args.both_bad == "drop":
        kept = [v for v in kept if v.winner != "both_bad"]
    data = counted(kept)
    print(f"{len(votes):,} votes read, {len(kept):,} chosen, {len(data.votes):,} counted from {data.accounts:,} "
          "accounts (docs/security.md rule 23)")
    for why, n in sorted(data.dropped.items()):
        print(f"  left out: {n:,} ({why})")
    if not data.votes:
        raise InputError(f"{args.votes}: no vote left to count after the per-account rules")
    return data


def cmd_rank(args: argparse.Namespace) -> int:
    from rexrank.arena.limits import ANOMALY_P, anomalous
    from rexrank.arena.ranking import MIN_VOTES, battles, position_bias, rate

    data = _counted(args)
    minimum = args.min_votes or MIN_VOTES
    rows = rate(battles(data.votes, data.weights), minimum, args.resamples, args.seed)
    width = max(len(r.model) for r in rows)
    print(f"\n{'rank':<7} {'model':<{width}}  {'rating':>7}  {'95% CI':<15} {'votes':>6}  {'win share':>9}")
    for r in (r for r in rows if r.ranked):
        span = f"{r.best_rank}" if r.best_rank == r.worst_rank else f"{r.best_rank}-{r.worst_rank}"
        print(f"{span:<7} {r.model:<{width}}  {r.rating:7.1f}  {r.low:7.1f}-{r.high:<7.1f} {r.votes:6,}  "
              f"{r.wins / r.weight:9.2f}")
    unranked = [r for r in rows if not r.ranked]
    if unranked:
        print(f"unranked (fewer than {minimum:,} votes): "
              + ", ".join(f"{r.model} ({r.votes:,})" for r in unranked))
    print("ratings: Bradley–Terry, Elo scale (mean 1000); a tie is half a win; 'both bad' "
          + ("left out" if args.both_bad == "drop" else "counts as a tie"))
    bias = position_bias([v.winner for v in data.votes], args.resamples, args.seed)
    if bias:
        print(f"position bias: {bias.share:.1%} of {bias.decisive:,} decisive votes chose A (95% CI "
              f"{bias.low:.1%}-{bias.high:.1%}; sides are drawn at random, so 50% is none)")
    flagged = anomalous(data)
    print(f"anomalous voters (agreement with the others' ratings below chance, p < {ANOMALY_P:g}): "
          + ("none" if not flagged else ""))
    for a in flagged:
        print(f"  {a.voter[:12]}…  {a.agreed:,} of {a.decisive:,} decisive votes agreed ({a.share:.0%}), "
              f"p = {a.p:.1e}")
    return OK


def cmd_agreement(args: argparse.Namespace) -> int:
    from rexrank.arena.agreement import agreement, load_tables

    data = _counted(args)
    where = sorted({(v.dataset, v.task) for v in data.votes})
    if len(where) > 1:
        raise InputError(f"{args.votes}: votes on {len(where)} datasets and tasks "
                         f"({', '.join(' '.join(w) for w in where[:4])}): choose one with --dataset and --task")
    dataset, task = where[0]
    tables = load_tables(args.results, dataset, task)
    missing = sorted({m for v in data.votes for m in (v.model_a, v.model_b)} - set(tables))
    if missing:
        print(f"  no {dataset} {task} result in {args.results} for {', '.join(missing)}: their votes left out")
    rows = agreement(data, tables, args.resamples, args.seed)
    if not rows:
        raise InputError(f"{args.results}: no metric scores both reports of any decisive vote on {dataset} {task}")
    width = max(len(r.metric) for r in rows)
    print(f"\n{dataset} {task}: the share of decisive votes where the metric prefers the chosen report")
    print(f"{'metric':<{width}}  {'agrees':>6}  {'95% CI':<11}  {'votes':>6}  {'ties':>5}  {'tau-b':>6}  models")
    for r in rows:
        tau = "-" if r.tau is None else f"{r.tau:+.2f}"
        print(f"{r.metric:<{width}}  {r.share:6.3f}  {r.low:.3f}-{r.high:.3f}  {r.votes:6,}  {r.metric_ties:5,}  "
              f"{tau:>6}  {r.models}")
    print("a metric tie counts half; tau-b: the metric's order of the models against the votes' Bradley–Terry order")
    return OK
