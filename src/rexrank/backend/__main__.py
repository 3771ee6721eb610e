"""`python -m rexrank.backend JOB`: the leaderboard's maintenance jobs, plain CLIs that run locally, in CI or as an
HF Job. Jobs: `aggregate --repo DIR` rebuilds leaderboard.parquet from a results repo checkout."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rexrank.errors import InputError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rexrank.backend", description=__doc__.split("\n")[0])
    jobs = parser.add_subparsers(dest="job", required=True)
    aggregate = jobs.add_parser("aggregate", help="rebuild leaderboard.parquet from the merged submissions")
    aggregate.add_argument("--repo", required=True, help="a local copy of the results repo")
    args = parser.parse_args(argv)
    try:
        if args.job == "aggregate":
            from rexrank.backend.aggregate import aggregate as run

            board = run(args.repo)
            ranked = board["rank"].notna().sum()
            print(f"{args.repo}/leaderboard.parquet: {len(board)} rows, {ranked} ranked, "
                  f"{len(board) - ranked} unranked")
            for _, row in board[board["unranked"].notna()].iterrows():
                print(f"  unranked: {row['model']} ({row['dataset']} {row['task']}): {row['unranked']}")
    except (InputError, OSError) as err:
        print(f"rexrank.backend: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
