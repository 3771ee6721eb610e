"""The rexrank leaderboard Space: the board of the results repo named by REXRANK_RESULTS (a Hub dataset id or a
local folder holding leaderboard.parquet); with nothing set, the official ReXrank tables shipped with rexrank (as
published in 2025-09, no CIs; no network)."""

import os

from rexrank.board.app import build, launch_options

demo = build(os.environ.get("REXRANK_RESULTS"), float(os.environ.get("REXRANK_REFRESH_S", "300")))

if __name__ == "__main__":
    demo.launch(**launch_options())
