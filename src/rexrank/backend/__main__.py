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
    where = aggregate.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", help="a local copy of the results repo")
    where.add_argument("--hub", metavar="ORG/NAME", help="the results repo on the Hub (token with write access in "
                                                          "HF_TOKEN): read main, commit the board to it")
    args = parser.parse_args(argv)
    try:
        if args.job == "aggregate":
            from rexrank.backend.aggregate import aggregate as run
            from rexrank.backend.aggregate import aggregate_hub

            board, where = (run(args.repo), args.repo) if args.repo else aggregate_hub(args.hub)
            ranked = board["rank"].notna().sum()
            print(f"{where}: leaderboard.parquet {len(board)} rows, {ranked} ranked, {len(board) - ranked} unranked")
            for _, row in board[board["unranked"].notna()].iterrows():
                print(f"  unranked: {row['model']} ({row['dataset']} {row['task']}): {row['unranked']}")
    except (InputError, OSError) as err:
        print(f"rexrank.backend: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
