"""The leaderboard at scale: a results repo of thousands of synthetic rows, aggregated, shaped and served.

    python benchmarks/leaderboard.py [--models 621] [--chromium /usr/bin/chromium]

`--models` synthetic models beside the demo's three and its imported row, on each of the 4 datasets and 2 tasks:
621 make 5,000 rows. Timed: `aggregate` over their result files, reading the board (`BoardSource.load`), the
shaping the Space does per request (one dataset and task, a search, a sort by a metric, the overview, rank ranges,
the model list), the app's build and launch, its API round trips through gradio_client, and in headless Chromium
the page load until the first table's rows show and a dataset switch until the new rows show. Each shaping step is
the median of 5 runs. There is no reference implementation to run beside it: ReXrank's site is static pages.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "benchmarks")]

from models import timed  # noqa: E402

from rexrank.board import model_page, views  # noqa: E402
from rexrank.board.aggregate import aggregate  # noqa: E402
from rexrank.board.sources import BoardSource, read_board  # noqa: E402
from rexrank.demo.board import demo_results_repo  # noqa: E402


def median_ms(fn, runs: int = 5) -> float:
    return 1000 * statistics.median(timed(fn)[0] for _ in range(runs))


def shaping(board) -> list[tuple[str, float]]:
    return [
        ("table: one dataset and task", median_ms(lambda: views.table(board, "mimic-cxr", "findings"))),
        ("table: search 'lab 1'", median_ms(lambda: views.table(board, "mimic-cxr", "findings", "lab 1"))),
        ("table: sorted by GREEN", median_ms(lambda: views.table(board, "mimic-cxr", "findings", sort_by="green"))),
        ("overview (mean rank across datasets)", median_ms(lambda: views.overview(board, "findings"))),
        ("rank ranges (stability plot's data)", median_ms(lambda: views.rank_ranges(board, "mimic-cxr", "findings"))),
        ("model list", median_ms(lambda: model_page.model_names(board))),
    ]


def served(repo: Path, chromium: str | None) -> list[tuple[str, float]]:
    from gradio_client import Client

    from rexrank.board.app import build, launch_options

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    seconds, app = timed(lambda: build(str(repo), refresh_s=3600))
    rows = [("app build (reads the board)", 1000 * seconds)]
    rows.append(("app launch", 1000 * timed(lambda: app.launch(prevent_thread_lock=True, server_name="127.0.0.1",
                                                               server_port=port, quiet=True,
                                                               **launch_options()))[0]))
    try:
        client = Client(app.local_url, verbose=False)
        everything = list(views.TITLES)
        client.predict("mimic-cxr", "", everything, "rank", api_name="/tables")  # first call: warm-up
        rows.append(("API /tables, both tasks' tables (warm)", median_ms(
            lambda: client.predict("iu-xray", "", everything, "rank", api_name="/tables"))))
        rows.append(("API /refresh (rereads the repo, all tables)", median_ms(
            lambda: client.predict("mimic-cxr", "", everything, "rank", False, "any", "any", "any", "findings",
                                   "task", "", api_name="/refresh"), runs=3)))
        rows.append(("API /export, the view as CSV", median_ms(
            lambda: client.predict("iu-xray", "", everything, "rank", False, api_name="/export"))))
        if chromium:
            board = read_board(repo)
            tops = {d: board[(board["dataset"] == d) & (board["task"] == "findings") & (board["rank"] == 1)]
                    ["model"].iloc[0] for d in ("rexgradient", "iu-xray")}
            assert tops["rexgradient"] != tops["iu-xray"], "the switch would not show"
            rows += browser(app.local_url, chromium, tops)
    finally:
        app.close()
    return rows


TOP_ROW = """name => [...document.querySelectorAll('[role=row]')].some(row => row.querySelector('[role=gridcell]')
    && /^1\\s/.test(row.innerText.trim()) && row.innerText.includes(name))"""


def browser(url: str, chromium: str, tops: dict[str, str]) -> list[tuple[str, float]]:
    """Seconds until the rank-1 row of the first dataset shows, then of IU-Xray after switching to it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(url)
            page.wait_for_function(TOP_ROW, arg=tops["rexgradient"], timeout=120_000)
            loaded = time.perf_counter() - start
            page.get_by_label("Dataset").click()
            start = time.perf_counter()
            page.get_by_role("option", name="IU-Xray").click()
            page.wait_for_function(TOP_ROW, arg=tops["iu-xray"], timeout=120_000)
            switched = time.perf_counter() - start
        finally:
            browser.close()
    return [("browser: page load until the first table's rank-1 row shows", 1000 * loaded),
            ("browser: dataset switch until the new rank-1 row shows", 1000 * switched)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=621,
                        help="synthetic models beside the demo's four (621: 5,000 rows)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="'' to skip the browser")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rexrank-bench-board-") as tmp:
        repo = demo_results_repo(Path(tmp) / "results", crowd=args.models)
        seconds, board = timed(lambda: aggregate(repo))
        results = len(list(repo.rglob("results/*.json"))) + len(list(repo.glob("imported/*.json")))
        rows = [(f"aggregate: {results:,} result files -> {len(board):,} rows", 1000 * seconds)]
        source = BoardSource(repo)
        rows.append(("read the board (BoardSource.load)", median_ms(source.load)))
        rows += shaping(source.board)
        rows += served(repo, args.chromium if args.chromium and Path(args.chromium).exists() else None)
    print(f"\n{len(board):,} rows ({args.models + 4} models x 4 datasets x 2 tasks)\n")
    print("| step | ms |\n|---|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:,.0f} |")


if __name__ == "__main__":
    main()
