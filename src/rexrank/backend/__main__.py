"""`python -m rexrank.backend JOB`: the leaderboard's maintenance jobs, plain CLIs that run locally, in CI or as an
HF Job. Jobs: `review` re-scores a submission pull request's public predictions and comments the comparison;
`private` scores a pull request's ReXGradient predictions against the gated references and publishes aggregates
only; `merge` merges a pull request at the head a job reviewed; `aggregate` rebuilds leaderboard.parquet from a
results repo (a checkout or the Hub); `bootstrap` starts a results repo from the official ReXrank figures."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from rexrank.errors import InputError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rexrank.backend", description=__doc__.split("\n")[0])
    jobs = parser.add_subparsers(dest="job", required=True)
    aggregate = jobs.add_parser("aggregate", help="rebuild leaderboard.parquet from the merged submissions")
    where = aggregate.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", help="a local copy of the results repo")
    where.add_argument("--hub", metavar="ORG/NAME", help="the results repo on the Hub (token with write access in "
                                                          "HF_TOKEN): read main, commit the board to it")
    check = jobs.add_parser("review", help="re-score a submission pull request's public predictions; comment")
    check.add_argument("--hub", required=True, metavar="ORG/NAME", help="the results repo")
    check.add_argument("--pr", type=int, help="the pull request's number (default: every open pull request)")
    check.add_argument("--dataset", action="append", default=[], metavar="NAME=SOURCE",
                       help="the maintainers' copy of a public test set (folder, file or Hub id), e.g. "
                            "mimic-cxr=datasets/mimic-cxr; repeat per dataset")
    private = jobs.add_parser("private", help="score a pull request's ReXGradient predictions; publish aggregates only")
    private.add_argument("--hub", required=True, metavar="ORG/NAME", help="the results repo")
    private.add_argument("--pr", required=True, type=int, help="the pull request's number")
    private.add_argument("--references", required=True, metavar="ORG/NAME",
                         help="the private ReXGradient test set (a rexrank-built Hub dataset; token in HF_TOKEN)")
    private.add_argument("--metrics", help="default: every metric this rexrank computes without a judge")
    private.add_argument("--work", metavar="DIR", help="keep each finished chunk of studies here (scores, no text) so "
                         "that a killed job, run again, continues; a folder only the maintainers can read")
    start = jobs.add_parser("bootstrap", help="create a results repo holding the official ReXrank figures (as "
                            "published, no CIs), and aggregate it")
    start.add_argument("--hub", required=True, metavar="ORG/NAME", help="the results repo (token in HF_TOKEN)")
    start.add_argument("--private", action="store_true", help="create it private (default: public)")
    join = jobs.add_parser("merge", help="merge a submission pull request, only at the head a job reviewed")
    join.add_argument("--hub", required=True, metavar="ORG/NAME", help="the results repo")
    join.add_argument("--pr", required=True, type=int, help="the pull request's number")
    args = parser.parse_args(argv)
    try:
        if args.job == "aggregate":
            from rexrank.board.aggregate import aggregate as run
            from rexrank.board.aggregate import aggregate_hub

            board, where = (run(args.repo), args.repo) if args.repo else aggregate_hub(args.hub)
            ranked = board["rank"].notna().sum()
            print(f"{where}: leaderboard.parquet {len(board)} rows, {ranked} ranked, {len(board) - ranked} unranked")
            for _, row in board[board["unranked"].notna()].iterrows():
                print(f"  unranked: {row['model']} ({row['dataset']} {row['task']}): {row['unranked']}")
            for problem in board.attrs.get("unreadable", []):
                print(f"rexrank.backend: error: left out: {problem}", file=sys.stderr)
            if board.attrs.get("unreadable"):
                return 1
        elif args.job == "review":
            from rexrank.backend.review import open_pull_requests, review

            sources = dict(spec.split("=", 1) for spec in args.dataset if "=" in spec)
            failed = 0
            for num in [args.pr] if args.pr else open_pull_requests(args.hub):
                try:
                    checks = review(args.hub, num, sources)
                except InputError as err:
                    if args.pr:
                        raise
                    failed += 1  # a sweep goes on: one hostile pull request must not stall the others
                    print(f"rexrank.backend: error: {args.hub} #{num}: {err}", file=sys.stderr)
                    continue
                flagged = [c for c in checks if c.verdict.startswith("MISMATCH")]
                print(f"{args.hub} #{num}: {len(checks)} numbers re-scored, {len(flagged)} outside the CI")
                for c in flagged:
                    print(f"  {c.dataset} {c.task} {c.metric}: submitted {c.submitted}, re-scored {c.rescored}")
            if failed:
                return 2
        elif args.job == "bootstrap":
            from rexrank.backend.bootstrap import bootstrap

            board, url = bootstrap(args.hub, private=args.private)
            official = int((board["provenance"] == "imported").sum())
            print(f"{args.hub}: {official} official rows imported; the board has {len(board)} rows, "
                  f"{int(board['rank'].notna().sum())} ranked; {url}")
        elif args.job == "merge":
            from rexrank.backend.merge import merge

            print(f"{args.hub} #{args.pr}: merged submissions/{merge(args.hub, args.pr)}/")
        elif args.job == "private":
            from rexrank.backend.private import score_pull_request
            from rexrank.scorers import parse_metrics

            for result in score_pull_request(args.hub, args.pr, args.references, parse_metrics(args.metrics),
                                             work=Path(args.work) if args.work else None):
                values = ", ".join(f"{k} {m.value:.4f}" for k, m in result.metrics.items() if m.value is not None)
                print(f"{result.dataset} {result.task}: {result.counts.get('scored', 0):,} studies; {values}")
    except (InputError, OSError) as err:
        print(f"rexrank.backend: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
