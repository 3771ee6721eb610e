"""The leaderboard Space's Gradio app (`space/app.py` and `rexrank leaderboard` run it). Wiring only: the board's
loading is `rexrank.board.sources`, its shaping `rexrank.board.views` (and, per tab, `model_page`, `radrbench` and
`about`), its figures `rexrank.board.figures`, its comparisons `rexrank.board.compare`."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from rexrank.board import about, compare, model_page, views
from rexrank.board.figures import model_figure, radrbench_figure, stability_figure
from rexrank.board.radrbench import RADRBENCH_VIEWS, radrbench_table
from rexrank.board.schema import METRICS
from rexrank.board.sources import DEMO, RESULTS_ENV, BoardSource, Results
from rexrank.catalog import TEST_SETS

RADRBENCH_ABOUT = """
**RadRBench-CXR** (the chest X-ray reasoning benchmark of ChestX-Reasoner): accuracy of each model's `<answer>`,
read by one documented parser for every model (`rexrank score-radrbench`); an answer it cannot read (no `<answer>`
tag, an unclosed tag, an empty output, a letter that is no option, two options where one is asked) counts as wrong
and is counted under **Unreadable**. Each cell is the accuracy with a 95% bootstrap CI over that group's items;
**Overall** is over every item. **Reasoning (RadRScore)** shows, for the models scored with an LLM judge
(`--judge-url`), RadRScore and its parts over the items with reference reasoning: Rc (completeness: the share of the
reference reasoning's observations the model recalls), Rf (factuality: the share of the model's observations the
report supports) and Re (effectiveness: the share of its reasoning steps that are effective); RadRScore is their
mean, each with a 95% CI over the items the judge scored. Submit with `rexrank score-radrbench --out
my-results/` and `rexrank submit --results my-results/`.
"""

COMPARE_ABOUT = """
Two models compared study by study on the same test split: for each metric **A − B** (every column is higher is
better, so a positive difference favours A), its **paired bootstrap** 95% CI and p-value (both models resampled on
the same study draws) and the **approximate randomisation** p-value (each study's pair of scores swapped at random),
both two-sided. Paired tests see differences that overlapping CIs on the Leaderboard hide. A judged metric (GREEN,
FineRadScore) is paired on the studies the judge scored for both. Only verified models are compared, on the
per-study tables their reviews wrote; ReXrank's figures as published have none. `rexrank compare A.parquet
B.parquet` gives the same numbers from the same tables.
"""

SUBMIT = """
### Submit a model
1. Score your predictions on each public test split, once per dataset and task, into one folder (`--dataset` is the
   test split you built with `dataset_scripts/`, or its Hub dataset `ORG/NAME`):
```bash
pip install "rexrank[models,llm]"
rexrank score --predictions my_model.mimic-cxr.findings.json --dataset datasets/mimic-cxr --task findings \\
    --dataset-name mimic-cxr --model-name "My Model" --institution "My Lab" --url https://example.org/my-model \\
    --out my-results/
```
2. Check, then open a pull request on the results repo (it is re-scored before it is merged; ReXGradient's private
   test set is scored by the maintainers' gated job from the predictions you pass with `--private`):
```bash
rexrank submit --results my-results/ --name "My Model" --institution "My Lab" --url https://example.org/my-model \\
    --dry-run
rexrank submit --results my-results/ --name "My Model" --institution "My Lab" --url https://example.org/my-model \\
    --private rexgradient.findings=gradient_predictions.json
```
`rexrank score --help` and `rexrank submit --help` list every option (`--repo`: the results repo, default
`REXRANK_RESULTS_REPO` or `rexrank/results`).
"""


# The leaderboard's filters as the address names them (?access=api&mimic=no&source=verified), and their values.
FILTERS = {"access": views.ACCESS_FILTER, "mimic": views.MIMIC_FILTER, "source": views.SOURCE_FILTER}
PAGES = {"leaderboard": "Leaderboard", "overview": "Overview", "compare": "Compare", "radrbench": "RadRBench-CXR",
         "model": "Model", "about": "About", "submit": "Submit"}  # the tabs: their ids in the address, their labels
DETAILS_LABEL = "Details: institution, access, date, trained on, links, source, note"
LEGEND = ("A number with `±` is rexrank's, with its 95% CI; one without is ReXrank's figure as published, no CI. "
          "A number marked ≠ was made otherwise than the published figures (another judge, precision or weights): "
          "**Details** says how. A blank rank is a row not ranked: **Details** says why. Click a column's header "
          "to sort by it; hover it for what the metric measures.")
# The tables in the page's own proportional font (Gradio's cells are monospace), numbers aligned; on a phone
# the cells keep to one line and the table scrolls sideways.
CSS = """
.board table, .board [role=gridcell], .board [role=gridcell] *, .board th, .board th * {
  font-family: var(--font) !important; }
.board [role=gridcell] { font-variant-numeric: tabular-nums; }
@media (max-width: 640px) {
  h1 { font-size: 22px !important; line-height: 1.25 !important; }  /* Gradio prefixes it with its container */
  #refresh { min-width: 72px !important; flex: 0 0 auto !important; align-self: flex-start; }  /* its word whole */
  .board [role=gridcell], .board [role=gridcell] *, .board th, .board th * { white-space: nowrap !important; }
  .figure { overflow-x: auto !important; }  /* a figure keeps a legible size and scrolls sideways, as tables do */
  .figure .matplotlib { justify-content: flex-start !important; align-items: flex-start !important; }
  .figure img { width: 760px !important; max-width: none !important; height: auto !important; }
}
"""


def _frame(shown: pd.DataFrame):
    """A table for display; the board's (`views.table`) as numbers shown as its text, so that sorting on a
    column's header orders numbers, not strings."""
    import gradio as gr

    columns = shown.columns.tolist()
    numeric = set(views.TITLES.values()) | {"Rank"} if "numbers" in shown.attrs else set()
    types = ["markdown" if column in ("Model", "Links") else "number" if column in numeric else "str"
             for column in columns]
    value = shown
    if numeric:
        value = {"headers": columns, "data": shown.attrs["numbers"],
                 "metadata": {"display_value": shown.to_numpy(dtype=object).tolist(), "styling": None}}
    widths = None
    if columns[:1] == ["Rank"]:
        narrow = {"Rank": "64px", "Rank range": "96px"}  # else their headers wrap a letter or two a line
        widths = [narrow[c] for c in columns[:2] if c in narrow]
    elif columns[:2] == ["Dataset", "Task"] and len(columns) > 2:  # a model's numbers: fit 1400 px, scroll on a phone
        widths = ["120px", "170px", *["112px"] * (len(columns) - 2)]
    return gr.Dataframe(value=value, datatype=types, column_widths=widths)


def build(results: Results = None, refresh_s: float = 300.0):
    """The board as a `gr.Blocks`: a Leaderboard tab (dataset, search, sort, metric columns; a tab per task), overview,
    RadRBench-CXR, model page, about, submit; reread on the button and every `refresh_s` seconds."""
    import gradio as gr

    source = BoardSource(results)
    source.load()
    metric_choices = [(views.TITLES[m], m) for m in METRICS]
    sort_choices = [("Rank (1/RadCliQ-v1)", "rank"), *metric_choices]
    datasets, first_dataset = [(label, key) for key, label in views.DATASETS.items()], next(iter(views.DATASETS))
    tasks, first_task = [(label, key) for key, label in views.TASKS.items()], next(iter(views.TASKS))
    public = [(label, key) for label, key in datasets if not TEST_SETS[key].private]  # a private set: aggregates only

    def chosen(metrics: list[str] | None) -> tuple[str, ...]:
        return tuple(m for m in METRICS if m in (metrics or []))  # in ReXrank's order, whatever the ticking order

    def filtered(access: str | None, mimic: str | None, provenance: str | None) -> views.Filters:
        return views.Filters(access or views.ANY, mimic or views.ANY, provenance or views.ANY)

    def tables(dataset: str, search: str, metrics: list[str], sort_by: str, details: bool = False,
               access: str | None = None, mimic: str | None = None, provenance: str | None = None):
        return tuple(_frame(views.table(source.board, dataset, task, search or "", chosen(metrics), sort_by or "rank",
                                        details=bool(details), filters=filtered(access, mimic, provenance)))
                     for task in views.TASKS)

    exports = Path(tempfile.mkdtemp(prefix="rexrank-board-csv-"))  # one CSV per dataset, rewritten on each view
    atexit.register(shutil.rmtree, exports, ignore_errors=True)

    def export_csv(dataset: str, search: str, metrics: list[str], sort_by: str, details: bool = False,
                   access: str | None = None, mimic: str | None = None, provenance: str | None = None):
        """The dataset's two tasks as the tables show them, as numbers (value, low, high), for the download."""
        frame = pd.concat([views.export(source.board, dataset, task, search or "", chosen(metrics), sort_by or "rank",
                                        filtered(access, mimic, provenance)) for task in views.TASKS],
                          ignore_index=True)
        path = exports / f"rexrank-{dataset if dataset in views.DATASETS else 'board'}.csv"
        frame.to_csv(path, index=False)
        return gr.DownloadButton(value=str(path))

    def from_address(request):
        """The view a link names; anything it names that the board does not have is ignored."""
        asked = dict(request.query_params) if request else {}
        names = model_page.model_names(source.board, source.radrbench)
        shown = asked["dataset"] if asked.get("dataset") in dict(map(reversed, public)) else public[0][1]
        task = asked["task"] if asked.get("task") in views.TASKS else first_task
        return (gr.Dropdown(value=asked["dataset"]) if asked.get("dataset") in views.DATASETS else gr.Dropdown(),
                *(gr.Dropdown(value=asked[key]) if asked.get(key) in allowed else gr.Dropdown()
                  for key, allowed in FILTERS.items()),
                gr.Dropdown(value=asked["model"]) if asked.get("model") in names else gr.Dropdown(),
                gr.Dropdown(value=shown), gr.Radio(value=task), *pair_choices(shown, task, asked.get("a"),
                                                                                 asked.get("b")))

    def pair_choices(dataset: str, task: str, a: str | None, b: str | None):
        """Models A and B for the Compare tab: kept when still on the board, else its first two comparable."""
        names = views.compare_choices(source.board, dataset, task)
        a = a if a in names else (names[0] if names else None)
        b = b if b in names and b != a else next((n for n in names if n != a), None)
        return gr.Dropdown(choices=names, value=a), gr.Dropdown(choices=names, value=b)

    def compared(dataset: str, task: str, a: str | None, b: str | None):
        heading, numbers = compare.compare(source.board, source.results, dataset, task, a or "", b or "")
        return heading, _frame(numbers)

    # Gradio hands a function the request when its parameter is annotated gr.Request; `from __future__ import
    # annotations` would leave a string it cannot resolve (gradio is imported here, not at the module's top).
    from_address.__annotations__["request"] = gr.Request

    def overview(task: str):
        return _frame(views.overview(source.board, task))

    def show_model(model: str | None):
        bars = model_page.model_bars(source.board, model or "")
        reasoning = source.radrbench[source.radrbench["model"] == (model or "")]
        return (model_figure(bars), model_page.model_card(source.board, model or "", source.radrbench),
                _frame(model_page.model_numbers(bars)),
                gr.Plot(radrbench_figure(reasoning), visible=not reasoning.empty, elem_classes=["figure"]))

    def model_choices(model: str | None):
        names = model_page.model_names(source.board, source.radrbench)
        return gr.Dropdown(choices=names, value=model if model in names else (names[0] if names else None))

    def stability(dataset: str, task: str):
        title = f"Rank stability: {views.DATASETS.get(dataset, dataset)}, {views.TASKS.get(task, task)}"
        return stability_figure(views.rank_ranges(source.board, dataset, task), title)

    def refreshed(model: str | None, dataset: str, task: str):
        return model_choices(model), stability(dataset, task)

    def radrbench(view: str, search: str):
        return _frame(radrbench_table(source.radrbench, view or "task", search or ""))

    def radrbench_plot():
        return radrbench_figure(source.radrbench)

    def refresh(dataset: str, search: str, metrics: list[str], sort_by: str, details: bool, access: str, mimic: str,
                provenance: str, task: str, view: str, radr_search: str):
        _, banner = source.load()
        return (gr.Markdown(banner, visible=bool(banner)),
                *tables(dataset, search, metrics, sort_by, details, access, mimic, provenance),
                overview(task), radrbench(view, radr_search), radrbench_plot())

    with gr.Blocks(title="rexrank leaderboard", analytics_enabled=False) as demo:
        with gr.Row():
            # non-breaking hyphens (U+2011): a phone's narrow title breaks between words, not into "X-" and "ray"
            gr.Markdown("# rexrank: AI\u2011generated chest X\u2011ray reports, ranked\n"
                        f"Results from **{source.name}**; ranked by 1/RadCliQ-v1, with 95% CIs on every number "
                        "rexrank scored.")
            refresh_button = gr.Button("Refresh", scale=0, min_width=80, size="sm", elem_id="refresh")
        banner = gr.Markdown(source.banner, visible=bool(source.banner))
        pages = {}
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab in sight (on more rows), none in a menu
            with gr.Tab(PAGES["leaderboard"], id="leaderboard") as pages["leaderboard"]:
                with gr.Row():
                    dataset = gr.Dropdown(datasets, value=first_dataset, label="Dataset", scale=1)
                    search = gr.Textbox(label="Search model or institution", scale=2)
                    sort_by = gr.Dropdown(sort_choices, value="rank", label="Sort by (best first)", scale=1,
                                          min_width=200)
                    access = gr.Dropdown([(label, key) for key, label in views.ACCESS_FILTER.items()],
                                         value=views.ANY, label="Access", scale=1, min_width=120)
                    mimic = gr.Dropdown([(label, key) for key, label in views.MIMIC_FILTER.items()],
                                        value=views.ANY, label="Trained on MIMIC-CXR", scale=1, min_width=120)
                    provenance = gr.Dropdown([(label, key) for key, label in views.SOURCE_FILTER.items()],
                                             value=views.ANY, label="Source", scale=1, min_width=120)
                with gr.Row():  # columns, so that on a phone the second goes below the first, not squeezed beside
                    with gr.Column(scale=4, min_width=320):
                        metrics = gr.CheckboxGroup(metric_choices, value=list(METRICS), label="Metric columns")
                    with gr.Column(scale=1, min_width=240):
                        details = gr.Checkbox(value=False,
                                              label=DETAILS_LABEL)
                boards = []
                task_pages = {}
                with gr.Tabs():
                    for key, label in views.TASKS.items():
                        with gr.Tab(label, id=key) as task_pages[key]:
                            boards.append(gr.Dataframe(label=label, interactive=False, wrap=True,
                                                       elem_classes=["board"]))
                with gr.Row():
                    with gr.Column(scale=4, min_width=320):
                        gr.Markdown(LEGEND)
                    with gr.Column(scale=0, min_width=200):
                        download = gr.DownloadButton("Download this view (CSV)", size="sm")
            with gr.Tab(PAGES["overview"], id="overview") as pages["overview"]:
                with gr.Row():
                    overview_task = gr.Radio([(label, key) for key, label in views.TASKS.items()],
                                             value=next(iter(views.TASKS)), label="Task")
                    stability_dataset = gr.Dropdown(datasets, value=first_dataset, label="Rank stability on")
                overview_table = gr.Dataframe(label="Mean rank across datasets", interactive=False,
                                              elem_classes=["board"])
                stability_plot = gr.Plot(label="Rank stability on the chosen dataset (1/RadCliQ-v1, 95% CIs)",
                                         elem_classes=["figure"])
            with gr.Tab(PAGES["compare"], id="compare") as pages["compare"]:
                with gr.Row():
                    pair_dataset = gr.Dropdown(public, value=public[0][1], label="Test set")
                    pair_task = gr.Radio(tasks, value=first_task, label="Task")
                with gr.Row():
                    # any name is taken (a link's, the API's): one not on the board is answered as such
                    pair_names = views.compare_choices(source.board, public[0][1], first_task)
                    model_a = gr.Dropdown(pair_names, label="A (verified models first)", allow_custom_value=True)
                    model_b = gr.Dropdown(pair_names, label="B", allow_custom_value=True)
                pair_heading = gr.Markdown()
                pair_table = gr.Dataframe(label="A − B per metric, paired tests", interactive=False, wrap=True,
                                          elem_classes=["board"])
                gr.Markdown(COMPARE_ABOUT)
            with gr.Tab(PAGES["radrbench"], id="radrbench") as pages["radrbench"]:
                with gr.Row():
                    radr_view = gr.Radio([(label, key) for key, label in RADRBENCH_VIEWS.items()], value="task",
                                         label="Columns", scale=2)
                    radr_search = gr.Textbox(label="Search model or institution", scale=2)
                radr_table = gr.Dataframe(label="RadRBench-CXR, 95% CIs", interactive=False, wrap=True,
                                          elem_classes=["board"])
                radr_plot = gr.Plot(label="Accuracy per task type, 95% CIs", elem_classes=["figure"])
                gr.Markdown(RADRBENCH_ABOUT)
            with gr.Tab(PAGES["model"], id="model") as pages["model"]:
                names = model_page.model_names(source.board, source.radrbench)
                model = gr.Dropdown(names, value=names[0] if names else None, label="Model")
                model_card = gr.Markdown()
                model_plot = gr.Plot(label="Each metric across datasets and tasks, with 95% CIs",
                                     elem_classes=["figure"])
                model_table = gr.Dataframe(label="The numbers", interactive=False, wrap=True, elem_classes=["board"])
                model_radr = gr.Plot(label="RadRBench-CXR accuracy per task type, 95% CIs", visible=False,
                                     elem_classes=["figure"])
            with gr.Tab(PAGES["about"], id="about") as pages["about"]:
                gr.Markdown(about.about())
            with gr.Tab(PAGES["submit"], id="submit") as pages["submit"]:
                gr.Markdown(SUBMIT)

        controls = [dataset, search, metrics, sort_by, details, access, mimic, provenance]
        pair = [pair_dataset, pair_task, model_a, model_b]
        # The address carries the view (?tab=&dataset=&task=&access=&mimic=&source=&model=): a link opens it; each
        # change rewrites it.
        filters = dict(zip(FILTERS, (access, mimic, provenance)))
        demo.load(from_address, None, [dataset, *filters.values(), model, pair_dataset, pair_task, model_a, model_b],
                  api_visibility="private").then(compared, pair, [pair_heading, pair_table], api_visibility="private")
        # the tabs: launch_options
        for name, tab in pages.items():
            tab.select(None, None, None, js=address_js("tab", repr(name)))
        for key, tab in task_pages.items():
            tab.select(None, None, None, js=address_js("task", repr(key)))
        dataset.change(None, dataset, None, js=address_js("dataset"))
        model.change(None, model, None, js=address_js("model"))
        for key, control in (*filters.items(), ("a", model_a), ("b", model_b)):
            control.input(None, control, None, js=address_js(key))
        model_a.input(compared, pair, [pair_heading, pair_table], api_visibility="private")
        model_b.input(compared, pair, [pair_heading, pair_table], api_name="compare")  # also the pair's API
        for key, control in (("dataset", pair_dataset), ("task", pair_task)):
            control.input(None, control, None, js=address_js(key))
            control.input(pair_choices, pair, [model_a, model_b], api_visibility="private").then(
                compared, pair, [pair_heading, pair_table], api_visibility="private").then(
                None, model_a, None, js=address_js("a")).then(None, model_b, None, js=address_js("b"))
        dataset.change(tables, controls, boards, api_name="tables")
        for control in (search, metrics, sort_by, details, access, mimic, provenance):
            control.change(tables, controls, boards, api_visibility="private")
        dataset.change(export_csv, controls, download, api_name="export")
        for control in (search, metrics, sort_by, access, mimic, provenance):
            control.change(export_csv, controls, download, api_visibility="private")
        demo.load(export_csv, controls, download, api_visibility="private")
        overview_task.change(overview, overview_task, overview_table, api_name="overview")
        radr_view.change(radrbench, [radr_view, radr_search], radr_table, api_name="radrbench")
        radr_search.change(radrbench, [radr_view, radr_search], radr_table, api_visibility="private")
        refresh_args = dict(fn=refresh, inputs=[*controls, overview_task, radr_view, radr_search],
                            outputs=[banner, *boards, overview_table, radr_table, radr_plot])
        model_outputs = [model_plot, model_card, model_table, model_radr]
        model.change(show_model, model, model_outputs, api_name="model")
        stability_dataset.change(stability, [stability_dataset, overview_task], stability_plot, api_name="stability")
        overview_task.change(stability, [stability_dataset, overview_task], stability_plot, api_visibility="private")
        after = dict(fn=refreshed, inputs=[model, stability_dataset, overview_task], outputs=[model, stability_plot],
                     api_visibility="private")
        refresh_button.click(**refresh_args, api_name="refresh").then(**after).then(
            export_csv, controls, download, api_visibility="private")
        gr.Timer(refresh_s).tick(**refresh_args, api_visibility="private").then(**after)
        demo.load(stability, [stability_dataset, overview_task], stability_plot, api_visibility="private")
        demo.load(show_model, model, model_outputs, api_visibility="private")
        demo.load(tables, controls, boards, api_visibility="private")
        demo.load(overview, overview_task, overview_table, api_visibility="private")
        demo.load(radrbench, [radr_view, radr_search], radr_table, api_visibility="private")
        demo.load(radrbench_plot, None, radr_plot, api_visibility="private")
    return demo


def main(results: str | None = None, port: int | None = None, demo: bool = False) -> None:
    """The app on `results` (default REXRANK_RESULTS, else the official ReXrank tables), or the demo board."""
    results = DEMO if demo else results if results is not None else os.environ.get(RESULTS_ENV)
    build(results, float(os.environ.get("REXRANK_REFRESH_S", "300"))).launch(server_port=port, **launch_options())


def address_js(key: str, value: str = "v") -> str:
    """A browser-side handler that sets `key` in the page's address to `value` (a JS expression; `v` is the
    event's input), without reloading."""
    return (f"(v) => {{ const u = new URL(window.location.href); u.searchParams.set({key!r}, {value}); "
            "window.history.replaceState(null, '', u); return []; }")


def tabs_from_address_js(labels: dict[str, str]) -> str:
    """Page-load code that clicks the tabs the address names (`tab`, `task`; ids -> labels) until they stay chosen
    (the page's first loads redraw the tabs, and a tab chosen from the server on load is not shown by Gradio 6); an
    id it does not know is ignored."""
    return ("() => { const labels = " + json.dumps(labels).replace("<", "\\u003c") + ";\n"
            "const q = new URLSearchParams(window.rexrankAddress ?? window.location.search);\n"
            "const wanted = [q.get('tab'), q.get('task')].filter(id => id && Object.hasOwn(labels, id));\n"
            "let tries = 0, steady = 0; const timer = setInterval(() => {  // the first loads redraw the tabs\n"
            "  const tabs = [...document.querySelectorAll('[role=tab]')];\n"
            "  const found = wanted.map(id => tabs.find(b => b.textContent.trim() === labels[id])).filter(Boolean);\n"
            "  const off = found.filter(t => t.getAttribute('aria-selected') !== 'true');\n"
            "  off.forEach(t => t.click()); steady = off.length ? 0 : steady + 1;\n"
            "  if (steady > 10 || ++tries > 100) clearInterval(timer);\n"
            "}, 100); return []; }")


def launch_options() -> dict[str, str]:
    """What `launch()` of the built app takes beside the address (Gradio 6 moved page CSS and head there)."""
    # The head keeps the address as the link gave it: the first tab's select event rewrites it before the page's js.
    head = "<script>window.rexrankAddress = window.location.search;</script>" + about.header_tooltips_script()
    return {"css": CSS, "head": head, "js": tabs_from_address_js(PAGES | views.TASKS)}
