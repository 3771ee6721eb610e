"""The leaderboard Space's Gradio app (`space/app.py` and `rexrank leaderboard` run it): the page's layout and its
wiring. What it answers is `rexrank.board.answers`, what it says and does in the browser `rexrank.board.page`; the
board's loading is `rexrank.board.sources`, its shaping `rexrank.board.views` (and, per tab, `model_page`,
`radrbench` and `about`), its figures `rexrank.board.figures`, its comparisons `rexrank.board.compare`."""

from __future__ import annotations

import os
from types import SimpleNamespace

from rexrank.board import about, arena, model_page, page, studies_view, views
from rexrank.board.page import PAGES, address_js, launch_options
from rexrank.board.radrbench import RADRBENCH_VIEWS
from rexrank.board.schema import METRICS
from rexrank.board.sources import DEMO, RESULTS_ENV, UNVERIFIED, BoardSource, Results


def build(results: Results = None, refresh_s: float = 300.0, arena_config: arena.ArenaConfig | None = None):
    """The board as a `gr.Blocks`: a Leaderboard tab (dataset, search, sort, metric columns; a tab per task), overview,
    RadRBench-CXR, model page, about, submit; reread on the button and every `refresh_s` seconds.

    A first view asks for one thing: the leaderboard's tables of the view its address names (`opening`). Every other
    tab fills itself the first time it is shown (its select event; a link that names it selects it), so a visitor
    who never opens one never waits for its figure."""
    import gradio as gr

    from rexrank.board import vqa_tab
    from rexrank.board.answers import Answers

    source = BoardSource(results)
    source.load()
    answers = Answers(source)
    ui = SimpleNamespace(pages={}, task_pages={}, boards=[], empty=[])
    with gr.Blocks(title="rexrank leaderboard", analytics_enabled=False) as demo:
        with gr.Row():
            # non-breaking hyphens (U+2011): a phone's narrow title breaks between words, not into "X-" and "ray"
            gr.Markdown("# rexrank: AI\u2011generated chest X\u2011ray reports, ranked\n"
                        f"Results from **{source.name}**; ranked by 1/RadCliQ-v1, with 95% CIs on every number "
                        "rexrank scored.")
            ui.refresh = gr.Button("Refresh", scale=0, min_width=80, size="sm", elem_id="refresh")
        ui.banner = gr.Markdown(source.banner, visible=bool(source.banner))
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab in sight (on more rows), none in a menu
            _leaderboard_tab(ui, source)
            _overview_tab(ui)
            _compare_tab(ui, answers)
            _radrbench_tab(ui)
            vqa_tab.tab(ui, source)  # ReXVQA (`rexrank.board.vqa_tab`)
            _model_tab(ui, source)
            arena.tab(ui, source, arena_config)  # issue 48: its own module (ArenaConfig: voting, from the env)
            with gr.Tab(PAGES["about"], id="about") as ui.pages["about"]:
                gr.Markdown(about.about())
            with gr.Tab(PAGES["submit"], id="submit") as ui.pages["submit"]:
                gr.Markdown(page.SUBMIT)
        # what each tab has shown in this page (the first showing fills it, the next ones ask nothing)
        ui.overview_shown, ui.compare_shown, ui.radrbench_shown = gr.State(False), gr.State(False), gr.State(False)
        ui.model_shown, ui.study_drawn = gr.State(None), gr.State(None)
        _wire_leaderboard(demo, ui, answers)
        _wire_tabs(ui, answers, refresh_s)
        arena.wire(ui)
        vqa_tab.wire(ui)
    _in_arrival_order(demo)
    if ui.arena.log is not None:  # the votes' scheduler ends with the app, after a last push (VoteLog.close)
        close = demo.close

        def closing(*args, **kwargs):
            ui.arena.log.close()
            return close(*args, **kwargs)

        demo.close = closing
    return demo


def _in_arrival_order(demo) -> None:
    """Events that write the same component run one at a time, in the order they arrive. Two redraws running side
    by side finish in either order, and the older one's answer (a visitor's Dataset, say, then Access at once) would
    be the table left shown, under the newer filters. Gradio queues each listener on its own (`concurrency_id`
    defaults to the function's id); a component's writers share one queue here. The answers are CPU work under one
    interpreter lock, so one at a time costs next to nothing that running side by side would gain."""
    group = {fn_id: fn_id for fn_id, fn in demo.fns.items() if fn.fn is not None}  # js-only events never queue

    def root(fn_id: int) -> int:
        while group[fn_id] != fn_id:
            fn_id = group[fn_id]
        return fn_id

    writer: dict[int, int] = {}  # component id -> an event that writes it
    for fn_id in group:
        for block in demo.fns[fn_id].outputs:
            if block._id in writer:
                group[root(fn_id)] = root(writer[block._id])
            else:
                writer[block._id] = fn_id
    for fn_id in group:
        demo.fns[fn_id].concurrency_id, demo.fns[fn_id].concurrency_limit = f"writes-{root(fn_id)}", 1


def _choices(labels: dict[str, str]) -> list[tuple[str, str]]:
    return [(label, key) for key, label in labels.items()]


def _source_choices(source: BoardSource) -> list[tuple[str, str]]:
    """The Source filter's choices: "yours" only on a board that holds one's own results."""
    mine = (source.board["provenance"] == UNVERIFIED).any()
    return [(label, key) for key, label in views.SOURCE_FILTER.items()
            if mine or key != views.SOURCE_KEYS[UNVERIFIED]]


def _leaderboard_tab(ui: SimpleNamespace, source: BoardSource) -> None:
    import gradio as gr

    with gr.Tab(PAGES["leaderboard"], id="leaderboard") as ui.pages["leaderboard"]:
        with gr.Row(equal_height=False):
            ui.dataset = gr.Dropdown(_choices(views.DATASET_TITLES), value=next(iter(views.DATASET_TITLES)),
                                     label="Dataset", scale=1, min_width=180)
            with gr.Column(scale=6, min_width=320):
                # on a phone the page's script closes it, so that the table comes first (`launch_options`)
                with gr.Accordion(page.CONTROLS_LABEL, open=True, elem_id="view-controls"):
                    with gr.Row():
                        ui.search = gr.Textbox(label="Search model or institution", scale=2)
                        ui.sort_by = gr.Dropdown([("Rank (1/RadCliQ-v1)", "rank"), *_metric_choices()],
                                                 value="rank", label="Sort by (best first)", scale=1, min_width=200,
                                                 elem_id="sort-by")
                        ui.access = gr.Dropdown(_choices(views.ACCESS_FILTER), value=views.ANY, label="Access",
                                                scale=1, min_width=120)
                        ui.mimic = gr.Dropdown(_choices(views.MIMIC_FILTER), value=views.ANY,
                                               label="Trained on MIMIC-CXR", scale=1, min_width=120)
                        ui.provenance = gr.Dropdown(_source_choices(source), value=views.ANY, label="Source",
                                                    scale=1, min_width=230)
                    # every metric the board holds, ReXrank's columns ticked (`views.DEFAULT_METRICS`), across the
                    # whole width (beside Details, its 15 choices took four rows and pushed the table below a
                    # desktop's first screen); Details under them
                    ui.metrics = gr.CheckboxGroup(_metric_choices(), value=list(views.DEFAULT_METRICS),
                                                  label="Metric columns", elem_id="metric-columns")
                    ui.details = gr.Checkbox(value=False, label=page.DETAILS_LABEL)
        # what a click on a column's header presses (the page's script): the Sort control, set to that column
        ui.header_sort = gr.Button("Sort by the header clicked", visible="hidden", elem_id="header-sort")
        ui.downloads = []  # a task's own: its rows only
        with gr.Tabs():
            for key, label in views.TASKS.items():
                with gr.Tab(label, id=key) as ui.task_pages[key]:
                    ui.boards.append(gr.Dataframe(label=label, interactive=False, wrap=True,
                                                  elem_classes=["board", "ranked"]))
                    ui.empty.append(gr.Markdown(visible=False, elem_classes=["board-empty"]))  # when it has no row
                    ui.downloads.append(gr.DownloadButton(f"Download this view (CSV: {label}, every metric)",
                                                          size="sm", elem_classes=["board-download"]))
        gr.Markdown(page.LEGEND)


def _metric_choices() -> list[tuple[str, str]]:
    return [(views.TITLES[m], m) for m in METRICS]


def _overview_tab(ui: SimpleNamespace) -> None:
    import gradio as gr

    with gr.Tab(PAGES["overview"], id="overview") as ui.pages["overview"]:
        with gr.Row():
            ui.overview_task = gr.Radio(_choices(views.TASKS), value=next(iter(views.TASKS)), label="Task")
            ui.stability_dataset = gr.Dropdown(_choices(views.DATASET_TITLES), value=next(iter(views.DATASET_TITLES)),
                                               label="Rank stability on")
        ui.overview_table = gr.Dataframe(label="Mean rank across datasets", interactive=False, elem_classes=["board"])
        ui.stability_plot = gr.Plot(label="Rank stability on the chosen dataset (1/RadCliQ-v1, 95% CIs)",
                                    elem_classes=["figure"])


def _compare_tab(ui: SimpleNamespace, answers) -> None:
    import gradio as gr

    public, first_task = answers.public, next(iter(views.TASKS))
    with gr.Tab(PAGES["compare"], id="compare") as ui.pages["compare"]:
        with gr.Row():
            ui.pair_dataset = gr.Dropdown(public, value=public[0][1], label="Test set")
            ui.pair_task = gr.Radio(_choices(views.TASKS), value=first_task, label="Task")
        with gr.Row():
            # any name is taken (a link's, the API's): one not on the board is answered as such
            names = views.compare_choices(answers.source.board, public[0][1], first_task)
            ui.model_a = gr.Dropdown(names, label="A (yours, then verified models, first)", allow_custom_value=True)
            ui.model_b = gr.Dropdown(names, label="B", allow_custom_value=True)
        ui.pair_heading = gr.Markdown(page.LOADING)
        ui.pair_table = gr.Dataframe(label="A − B per metric, paired tests", interactive=False, wrap=True,
                                     elem_classes=["board"])
        gr.Markdown(page.COMPARE_ABOUT)


def _radrbench_tab(ui: SimpleNamespace) -> None:
    import gradio as gr

    with gr.Tab(PAGES["radrbench"], id="radrbench") as ui.pages["radrbench"]:
        with gr.Row():
            ui.radr_view = gr.Radio(_choices(RADRBENCH_VIEWS), value="task", label="Columns", scale=2)
            ui.radr_search = gr.Textbox(label="Search model or institution", scale=2)
        ui.radr_table = gr.Dataframe(label="RadRBench-CXR, 95% CIs", interactive=False, wrap=True,
                                     elem_classes=["board"])
        ui.radr_plot = gr.Plot(label="Accuracy per task type, 95% CIs", elem_classes=["figure"])
        gr.Markdown(page.RADRBENCH_ABOUT)


def _model_tab(ui: SimpleNamespace, source: BoardSource) -> None:
    import gradio as gr

    from rexrank.board import vqa_tab

    with gr.Tab(PAGES["model"], id="model") as ui.pages["model"]:
        names = model_page.model_names(source.board, source.radrbench)
        # no model until the tab is shown: then the address's (a link's) or the board's first, never another
        # model's card under the name a link asked for
        ui.model = gr.Dropdown(names, value=None, label="Model")
        ui.model_card = gr.Markdown(page.LOADING)
        ui.model_plot = gr.Plot(label="Each metric across datasets and tasks, with 95% CIs", elem_classes=["figure"])
        ui.model_table = gr.Dataframe(label="The numbers", interactive=False, wrap=True, elem_classes=["board"])
        ui.model_radr = gr.Plot(label="RadRBench-CXR accuracy per task type, 95% CIs", visible=False,
                                elem_classes=["figure"])
        # each metric's per-study distribution (a board on this machine: `rexrank.board.studies_view`)
        ui.study_pair = gr.Dropdown([], label="Per-study scores on", visible=False)
        ui.study_note = gr.Markdown(visible=False)
        ui.study_plot = gr.HTML(visible=False, elem_id="per-study", js_on_load=studies_view.CLICK_JS)
        ui.study_table = gr.Dataframe(visible=False, interactive=False, wrap=True, elem_classes=["board"])
        vqa_tab.model_section(ui)  # the model's ReXVQA numbers, where it has some


def _wire_leaderboard(demo, ui: SimpleNamespace, answers) -> None:
    """The first view, the address, and the leaderboard's controls."""
    controls = [ui.dataset, ui.search, ui.metrics, ui.sort_by, ui.details, ui.access, ui.mimic, ui.provenance]
    filters = dict(zip(page.FILTERS, (ui.access, ui.mimic, ui.provenance)))
    ui.controls, ui.csv = controls, dict(fn=answers.export_csv, inputs=controls, outputs=ui.downloads,
                                         api_visibility="private")
    ui.notes = dict(fn=answers.empty_notes, inputs=controls, outputs=ui.empty, api_visibility="private")
    # The first view: the tables of the view the address names (?dataset=&task=&access=&mimic=&source=), in one
    # answer, then the CSV of that view for the download. The other tabs fill themselves when first shown.
    first = demo.load(answers.opening, controls, [ui.dataset, *filters.values(), *ui.boards, *ui.empty],
                      api_visibility="private")
    first.then(**ui.csv)
    # the tabs: the address says which is shown (launch_options), each change rewrites it
    for name, tab in ui.pages.items():
        tab.select(None, None, None, js=address_js("tab", repr(name)))
    for key, tab in ui.task_pages.items():
        tab.select(None, None, None, js=address_js("task", repr(key)))
    ui.dataset.change(None, ui.dataset, None, js=address_js("dataset"))
    for key, control in filters.items():
        control.input(None, control, None, js=address_js(key))
    # A control the visitor changes redraws the tables. Those the page itself sets (the first view from the
    # address, Sort from a header's click) answer only the visitor's changes (`input`), so that setting them asks
    # for nothing more; the others answer any change (a Textbox's `input` misses a paste in some browsers).
    ui.dataset.input(answers.tables, controls, ui.boards, api_name="tables").then(**ui.notes)
    ui.dataset.input(answers.export_csv, controls, ui.downloads, api_name="export")
    for control in (ui.sort_by, ui.access, ui.mimic, ui.provenance):
        control.input(answers.tables, controls, ui.boards, api_visibility="private").then(**ui.notes).then(**ui.csv)
    for control in (ui.search, ui.metrics, ui.details):
        control.change(answers.tables, controls, ui.boards, api_visibility="private").then(**ui.notes).then(**ui.csv)
    ui.header_sort.click(answers.sorted_by_header, controls, [ui.sort_by, *ui.boards, *ui.empty],
                         api_visibility="private",
                         js="(...v) => { v[3] = window.rexrankHeaderSort ?? v[3]; return v; }").then(**ui.csv)


def _wire_tabs(ui: SimpleNamespace, answers, refresh_s: float) -> None:
    """Each other tab's first showing and controls, and the refresh (button and timer)."""
    import gradio as gr

    pair = [ui.pair_dataset, ui.pair_task, ui.model_a, ui.model_b]
    model_view = [ui.model_plot, ui.model_card, ui.model_table, ui.model_radr, ui.study_pair, ui.study_note]
    study = dict(fn=answers.study_figure, inputs=[ui.model, ui.study_pair, ui.study_drawn],
                 outputs=[ui.study_plot, ui.study_table, ui.study_drawn], api_visibility="private")
    ui.pages["overview"].select(answers.open_overview, [ui.overview_shown, ui.overview_task, ui.stability_dataset],
                                [ui.overview_table, ui.stability_plot, ui.overview_shown], api_visibility="private")
    ui.pages["compare"].select(answers.open_compare, [ui.compare_shown, *pair],
                               [*pair, ui.pair_heading, ui.pair_table, ui.compare_shown], api_visibility="private")
    ui.pages["radrbench"].select(answers.open_radrbench, [ui.radrbench_shown, ui.radr_view, ui.radr_search],
                                 [ui.radr_table, ui.radr_plot, ui.radrbench_shown], api_visibility="private")
    ui.pages["model"].select(answers.open_model, [ui.model, ui.model_shown], [ui.model, *model_view, ui.model_shown],
                             api_visibility="private").then(**study)
    ui.model.change(None, ui.model, None, js=address_js("model"))
    for key, control in (("a", ui.model_a), ("b", ui.model_b)):
        control.input(None, control, None, js=address_js(key))
    compared = dict(fn=answers.compared, inputs=pair, outputs=[ui.pair_heading, ui.pair_table])
    ui.model_a.input(**compared, api_visibility="private")
    ui.model_b.input(**compared, api_name="compare")  # also the pair's API
    for key, control in (("dataset", ui.pair_dataset), ("task", ui.pair_task)):
        control.input(None, control, None, js=address_js(key))
        control.input(answers.pair_choices, pair, [ui.model_a, ui.model_b], api_visibility="private").then(
            **compared, api_visibility="private").then(
            None, ui.model_a, None, js=address_js("a")).then(None, ui.model_b, None, js=address_js("b"))
    ui.overview_task.change(answers.overview, ui.overview_task, ui.overview_table, api_name="overview")
    ui.radr_view.change(answers.radrbench, [ui.radr_view, ui.radr_search], ui.radr_table, api_name="radrbench")
    ui.radr_search.change(answers.radrbench, [ui.radr_view, ui.radr_search], ui.radr_table, api_visibility="private")
    ui.model.input(answers.chose_model, ui.model, [*model_view, ui.model_shown], api_name="model").then(**study)
    ui.study_pair.input(**study)
    ui.study_plot.click(answers.studies_in_bar, [ui.model, ui.study_pair], ui.study_table, api_visibility="private")
    stability = dict(fn=answers.stability, inputs=[ui.stability_dataset, ui.overview_task], outputs=ui.stability_plot)
    ui.stability_dataset.change(**stability, api_name="stability")
    ui.overview_task.change(**stability, api_visibility="private")
    refresh = dict(fn=answers.refresh, inputs=[*ui.controls, ui.overview_task, ui.radr_view, ui.radr_search],
                   outputs=[ui.banner, *ui.boards, ui.overview_table, ui.radr_table, ui.radr_plot])
    after = dict(fn=answers.refreshed, inputs=[ui.model, ui.stability_dataset, ui.overview_task],
                 outputs=[ui.model, ui.stability_plot], api_visibility="private")
    ui.refresh.click(**refresh, api_name="refresh").then(**after).then(**ui.csv).then(**ui.notes)
    gr.Timer(refresh_s).tick(**refresh, api_visibility="private").then(**after).then(**ui.notes)


def main(results: str | None = None, port: int | None = None, demo: bool = False) -> None:
    """The app on `results` (default REXRANK_RESULTS, else the official ReXrank tables), or the demo board."""
    results = DEMO if demo else results if results is not None else os.environ.get(RESULTS_ENV)
    build(results, float(os.environ.get("REXRANK_REFRESH_S", "300"))).launch(server_port=port, **launch_options())
