"""The leaderboard at scale: a results repo of thousands of synthetic rows, aggregated, shaped and served.

    python benchmarks/leaderboard.py [--models 621] [--chromium /usr/bin/chromium]
    python benchmarks/leaderboard.py --first-view [--root TREE] [--runs 5] [--results PATH]

`--models` synthetic models beside the demo's three and its imported row, on each of the 4 datasets and 2 tasks:
621 make 5,000 rows. Timed: `aggregate` over their result files, reading the board (`BoardSource.load`), the
shaping the Space does per request (one dataset and task, a search, a sort by a metric, the overview, rank ranges,
the model list), the app's build and launch, its API round trips through gradio_client, and in headless Chromium
the page load until the first table's rows show and a dataset switch until the new rows show. Each shaping step is
the median of 5 runs. There is no reference implementation to run beside it: ReXrank's site is static pages.

`--first-view`: the Space as a visitor first meets it. `python space/app.py` (the official tables, as the Space
runs with no REXRANK_RESULTS) until its page answers; each stage of that start in a fresh interpreter (gradio's
import, rexrank's, `build()`, `launch()`; whether torch and matplotlib were imported); then in headless Chromium,
each time in a fresh browser context, at 1400 and 390 px: the page load until the rank-1 row shows, until the
server has gone idle (what the first view asked of it done), the server's CPU meanwhile, the events the page ran
and where the table's first row lies. `--root` runs another tree's space/ and src/ (`git archive COMMIT | tar -x
-C TREE`), so that two commits are measured on the same machine, side by side.
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
from rexrank.demo.board import demo_keys, demo_results_repo  # noqa: E402


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


# --- the first view: the Space's start and its first table ------------------------------------------------------------

# Run in a fresh interpreter, in the tree measured (`--root`): each stage of the Space's start, then it serves on.
STAGES = r"""
import json, os, sys, time
t0 = time.perf_counter()
import gradio
t1 = time.perf_counter()
import rexrank.board.app as app
t2 = time.perf_counter()
demo = app.build(os.environ.get("REXRANK_RESULTS"), 3600.0)
t3 = time.perf_counter()
demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=int(sys.argv[1]), quiet=True,
            **app.launch_options())
t4 = time.perf_counter()
print(json.dumps({"import gradio": t1 - t0, "import rexrank.board.app": t2 - t1, "build()": t3 - t2,
                  "launch()": t4 - t3, "torch imported": "torch" in sys.modules,
                  "matplotlib imported": "matplotlib" in sys.modules}), flush=True)
while True:
    time.sleep(60)
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serving(url: str, process, timeout_s: float = 180) -> float:
    """Seconds from now until `url` answers 200 (polled every 20 ms)."""
    import urllib.request

    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        if process.poll() is not None:
            raise RuntimeError(f"the Space exited ({process.returncode}) before serving")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return time.perf_counter() - start
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(url)


def _space(root: Path, port: int, script: list[str], results: str | None):
    """A Space process on loopback: `script` run in `root` with its src/ first on the path."""
    import os
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(root / "src"), "GRADIO_SERVER_PORT": str(port),
           "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_ANALYTICS_ENABLED": "False", "HF_HUB_OFFLINE": "1",
           "REXRANK_REFRESH_S": "3600"}
    env.pop("REXRANK_RESULTS", None)
    if results:
        env["REXRANK_RESULTS"] = results
    return subprocess.Popen([sys.executable, *script], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used, from /proc."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FIRST_CELL = """() => [...document.querySelectorAll('.board [role=row]')].some(row =>
    row.offsetParent && row.querySelector('[role=gridcell]') && /^1\\s/.test(row.innerText.trim()))"""


def _view(browser, url: str, width: int, pid: int, quiet_s: float = 1.0) -> dict[str, float]:
    """One first view in a fresh browser context: ms until the rank-1 row shows, ms until the server is back to its
    idle rate (what the view asked of it done: a `quiet_s` window using no more CPU than an idle one, plus 20 ms; the
    window not counted), the server's CPU ms for the view beyond its idle rate (Gradio's queue polls: a few percent of
    a core), the events the page ran on the server, and where the table's first row lies (px from the page's top)."""
    step = 0.1
    before, t = _cpu_s(pid), time.perf_counter()
    time.sleep(2)
    idle_rate = (_cpu_s(pid) - before) / (time.perf_counter() - t)  # CPU seconds per second, idle
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    events = []
    page.on("request", lambda r: events.append(r.url) if "/queue/join" in r.url else None)
    cpu = _cpu_s(pid)
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function(FIRST_CELL, timeout=120_000)
    first = time.perf_counter() - start
    top = page.evaluate("() => [...document.querySelectorAll('.board [role=gridcell]')].find(c => c.offsetParent)"
                        ".getBoundingClientRect().top + window.scrollY")
    samples = [(time.perf_counter(), _cpu_s(pid))]
    window = round(quiet_s / step)
    while True:
        time.sleep(step)
        samples.append((time.perf_counter(), _cpu_s(pid)))
        if len(samples) > window:
            (t0, c0), (t1, c1) = samples[-window - 1], samples[-1]
            if c1 - c0 <= idle_rate * (t1 - t0) + 0.02 or t1 - start > 120:
                break
    settled_at, settled_cpu = samples[-window - 1]
    context.close()
    return {"first": 1000 * first, "settled": 1000 * (settled_at - start),
            "cpu": 1000 * max(0.0, settled_cpu - cpu - idle_rate * (settled_at - start)), "events": len(events),
            "top": top}


def first_view(root: Path, chromium: str | None, runs: int, results: str | None) -> list[tuple[str, str]]:
    """The Space as it starts (`python space/app.py` in `root`, the official tables unless `results`): seconds until
    it serves its page, each stage of that, then in headless Chromium the first view at 1400 and 390 px."""
    rows: list[tuple[str, str]] = []
    starts = []
    for _ in range(runs):
        port = _port()
        process = _space(root, port, ["space/app.py"], results)
        try:
            starts.append(_serving(f"http://127.0.0.1:{port}/", process))
        finally:
            process.kill()
            process.wait()
    rows.append((f"start: `python space/app.py` until its page answers (median of {runs})",
                 f"{1000 * statistics.median(starts):,.0f}"))
    import json

    port = _port()
    process = _space(root, port, ["-c", STAGES, str(port)], results)
    try:
        stages = json.loads(process.stdout.readline())
        for name in ("import gradio", "import rexrank.board.app", "build()", "launch()"):
            rows.append((f"start, stage: {name}", f"{1000 * stages[name]:,.0f}"))
        rows.append(("start: torch imported / matplotlib imported",
                     f"{'yes' if stages['torch imported'] else 'no'} / "
                     f"{'yes' if stages['matplotlib imported'] else 'no'}"))
        if chromium:
            from playwright.sync_api import sync_playwright

            url = f"http://127.0.0.1:{port}/"
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, headless=True,
                                            args=["--no-sandbox", "--disable-gpu"])
                try:
                    _view(browser, url, 1400, process.pid)  # the first page ever: Gradio's first imports, not counted
                    for width in (1400, 390):
                        views_ = [_view(browser, url, width, process.pid) for _ in range(runs)]
                        med = {k: statistics.median(v[k] for v in views_) for k in views_[0]}
                        rows += [(f"{width} px: page load until the rank-1 row shows (median of {runs})",
                                  f"{med['first']:,.0f}"),
                                 (f"{width} px: until the server is idle (the first view's work done)",
                                  f"{med['settled']:,.0f}"),
                                 (f"{width} px: the server's CPU for the first view", f"{med['cpu']:,.0f}"),
                                 (f"{width} px: events the page runs on the server", f"{med['events']:.0f}"),
                                 (f"{width} px: the first row's top, px from the page's top", f"{med['top']:,.0f}")]
                finally:
                    browser.close()
    finally:
        process.kill()
        process.wait()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", type=int, default=621,
                        help="synthetic models beside the demo's four (621: 5,000 rows)")
    parser.add_argument("--chromium", default="/usr/bin/chromium", help="'' to skip the browser")
    parser.add_argument("--first-view", action="store_true",
                        help="only the Space's start and first view (python space/app.py, the official tables)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="with --first-view: the tree whose space/ and src/ to run (another commit, exported)")
    parser.add_argument("--runs", type=int, default=5, help="with --first-view: runs of each measure")
    parser.add_argument("--results", help="with --first-view: REXRANK_RESULTS for the Space (default: unset)")
    args = parser.parse_args()
    chromium = args.chromium if args.chromium and Path(args.chromium).exists() else None
    if args.first_view:
        rows = first_view(args.root.resolve(), chromium, args.runs, args.results)
        print(f"\nthe Space of {args.root} on {args.results or 'the official tables'}\n")
        print("| step | ms |\n|---|---:|")
        for name, value in rows:
            print(f"| {name} | {value} |")
        return
    with tempfile.TemporaryDirectory(prefix="rexrank-bench-board-") as tmp:
        repo = demo_results_repo(Path(tmp) / "results", crowd=args.models)
        seconds, board = timed(lambda: aggregate(repo, demo_keys()))
        results = len(list(repo.rglob("results/*.json"))) + len(list(repo.glob("imported/*.json")))
        rows = [(f"aggregate: {results:,} result files -> {len(board):,} rows", 1000 * seconds)]
        source = BoardSource(repo)
        rows.append(("read the board (BoardSource.load)", median_ms(source.load)))
        rows += shaping(source.board)
        rows += served(repo, chromium)
    print(f"\n{len(board):,} rows ({args.models + 4} models x 4 datasets x 2 tasks)\n")
    print("| step | ms |\n|---|---:|")
    for name, ms in rows:
        print(f"| {name} | {ms:,.0f} |")


if __name__ == "__main__":
    main()
