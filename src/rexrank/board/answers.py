"""What the leaderboard page answers to each of its events, on one board (`BoardSource`): the tables of a view, the
CSV of it, the first view from the address, and each tab the first time it is shown. Imported by `build` only, so
gradio is imported here at the top: Gradio hands a handler the request when its parameter is annotated gr.Request,
which a postponed (string) annotation would not resolve."""

import atexit
import shutil
import tempfile
from pathlib import Path

import gradio as gr
import pandas as pd

from rexrank.board import compare, model_page, studies_view, views
from rexrank.board.figures import model_figure, radrbench_figure, stability_figure
from rexrank.board.page import DETAIL_WIDTHS, FILTERS, METRIC_WIDTH
from rexrank.board.radrbench import radrbench_table
from rexrank.board.schema import METRICS
from rexrank.board.sources import BoardSource, own_dataset
from rexrank.catalog import TEST_SETS
from rexrank.text import to_markdown


def frame(shown: pd.DataFrame) -> gr.Dataframe:
    """A table for display; the board's (`views.table`) as numbers shown as its text, so that sorting on a
    column's header orders numbers, not strings."""
    columns = shown.columns.tolist()
    numeric = set(views.TITLES.values()) | {"Rank"} if "numbers" in shown.attrs else set()
    types = ["markdown" if column in ("Model", "Links") else "number" if column in numeric else "str"
             for column in columns]
    value = shown
    if numeric:
        own = shown.attrs.get("own") or [False] * len(shown)  # one's own rows shaded, beside their ‡
        styling = [[OWN_ROW if mine else "" for _ in columns] for mine in own] if any(own) else None
        value = {"headers": columns, "data": shown.attrs["numbers"],
                 "metadata": {"display_value": [[unbroken_ci(x) if c in numeric else x for c, x in zip(columns, row)]
                                                for row in shown.to_numpy(dtype=object).tolist()],
                              "styling": styling}}
    widths = None
    if columns[:1] == ["Rank"] and "Note" in columns:  # the leaderboard with Details: every column sized
        widths = [DETAIL_WIDTHS.get(c, METRIC_WIDTH) for c in columns]
    elif columns[:1] == ["Rank"]:
        # as narrow as their headers allow (a word a line): a phone's first screen shows the ranking metric too
        narrow = {"Rank": "62px", "Rank range": "66px"}
        widths = [narrow[c] for c in columns[:2] if c in narrow]
    elif columns[:2] == ["Dataset", "Task"] and len(columns) > 2:  # a model's numbers: fit 1400 px, scroll on a phone
        widths = ["120px", "170px", *[METRIC_WIDTH] * (len(columns) - 2)]  # "0.919 [0.899, 0.941]" whole
    elif columns[:2] == ["Metric", "A − B"]:  # a pair's: the difference and its p-values on a phone's first screen
        widths = [PAIR_WIDTHS.get(c, "150px") for c in columns]
    extra = {}
    if columns[:1] == ["Rank"] and "Model" in columns[:3]:  # the leaderboard's tables: Details or not, marked
        extra["elem_classes"] = ["board", "ranked", *(["details"] if "Note" in columns else [])]
    elif columns[:2] == ["Metric", "A − B"]:
        extra["elem_classes"] = ["board", "pair"]
    return gr.Dataframe(value=value, datatype=types, column_widths=widths, **extra)


# A pair's table: metric, difference and both p-values in a phone's 324 px (the page's CSS trims the cells' padding)
PAIR_WIDTHS = {"Metric": "112px", "A − B": "66px", "p (bootstrap)": "88px", "p (AR)": "58px", "Studies": "72px",
               "Note": "260px"}


def unbroken_ci(text):
    """A metric cell's text that a line may break only between the number and its CI (`0.911 [0.885, 0.942]`, the
    CI whole on the next line where a phone's column is narrow), never inside the CI."""
    return text.replace(", ", ",\u00a0").replace("± ", "±\u00a0") if isinstance(text, str) else text


OWN_ROW = "background: var(--color-accent-soft);"  # a cell of one's own row (`views.table`'s attrs["own"])


def _asked(request: gr.Request | None) -> dict[str, str]:
    return dict(request.query_params) if request else {}


class Answers:
    """The page's handlers. A view's controls, in this order: dataset, search, metrics, sort_by, details, access,
    mimic, provenance (the leaderboard's); a pair's: dataset, task, a, b (Compare's)."""

    def __init__(self, source: BoardSource):
        self.source = source
        self.sort_keys = {"rank", *METRICS}
        # a private set shows aggregates only: nothing to compare study by study
        self.public = [(label, key) for key, label in views.DATASET_TITLES.items() if not TEST_SETS[key].private]
        self.exports = Path(tempfile.mkdtemp(prefix="rexrank-board-csv-"))  # one CSV per dataset, rewritten per view
        atexit.register(shutil.rmtree, self.exports, ignore_errors=True)

    # --- the leaderboard ---------------------------------------------------------------------------------------

    @staticmethod
    def _metrics(metrics: list[str] | None) -> tuple[str, ...]:
        return tuple(m for m in METRICS if m in (metrics or []))  # in the board's order, whatever the ticking order

    @staticmethod
    def _filters(access: str | None, mimic: str | None, provenance: str | None) -> views.Filters:
        return views.Filters(access or views.ANY, mimic or views.ANY, provenance or views.ANY)

    def tables(self, dataset: str, search: str, metrics: list[str], sort_by: str, details: bool = False,
               access: str | None = None, mimic: str | None = None, provenance: str | None = None):
        filters = self._filters(access, mimic, provenance)
        return tuple(frame(views.table(self.source.board, dataset, task, search or "", self._metrics(metrics),
                                       sort_by or "rank", details=bool(details), filters=filters))
                     for task in views.TASKS)

    def empty_notes(self, dataset: str, search: str, metrics: list[str], sort_by: str, details: bool = False,
                    access: str | None = None, mimic: str | None = None, provenance: str | None = None):
        """Under each task's table, why it has no row (`views.no_rows`), hidden when it has some."""
        filters = self._filters(access, mimic, provenance)
        notes = (views.no_rows(self.source.board, dataset, task, search or "", filters) for task in views.TASKS)
        return tuple(gr.Markdown(note, visible=bool(note)) for note in notes)

    def view(self, *controls):
        """The leaderboard's tables and, under each, what it says when it has no row."""
        return (*self.tables(*controls), *self.empty_notes(*controls))

    def export_csv(self, dataset: str, search: str, metrics: list[str], sort_by: str, details: bool = False,
                   access: str | None = None, mimic: str | None = None, provenance: str | None = None):
        """Each task tab's download: its table's rows, in its order, as numbers (value, low, high) of every metric
        the board holds (not only the columns shown: a CSV is read by a program), that task's rows only."""
        filters = self._filters(access, mimic, provenance)
        name = dataset if dataset in views.DATASET_TITLES else "board"
        buttons = []
        for task in views.TASKS:
            path = self.exports / f"rexrank-{name}.{task}.csv"
            views.export(self.source.board, dataset, task, search or "", METRICS, sort_by or "rank",
                         filters).to_csv(path, index=False)
            buttons.append(gr.DownloadButton(value=str(path)))
        return tuple(buttons)

    def opening(self, dataset, search, metrics, sort_by, details, access, mimic, provenance,
                request: gr.Request):
        """The first view: the leaderboard's controls as the address names them (anything it names that the board
        does not have is ignored) and its tables for them, in one answer."""
        wanted = _asked(request)
        if wanted.get("dataset") in views.DATASET_TITLES:
            dataset = wanted["dataset"]
        elif mine := own_dataset(self.source.board):  # a board of one's own results opens on their test set
            dataset = mine
        if wanted.get("source") in views.SOURCE_ALIASES:  # an older link's word for the same rows
            wanted["source"] = views.SOURCE_ALIASES[wanted["source"]]
        access, mimic, provenance = (wanted[key] if wanted.get(key) in allowed else value for (key, allowed), value
                                     in zip(FILTERS.items(), (access, mimic, provenance)))
        controls = (dataset, search, metrics, sort_by, details, access, mimic, provenance)
        return (gr.Dropdown(value=dataset), gr.Dropdown(value=access), gr.Dropdown(value=mimic),
                gr.Dropdown(value=provenance), *self.view(*controls))

    def sorted_by_header(self, dataset, search, metrics, sort_by, *rest):
        """A click on a column's header (the page's script puts its key in `sort_by`): the Sort control set to it
        and the tables in its order."""
        sort_by = sort_by if sort_by in self.sort_keys else "rank"
        return (gr.Dropdown(value=sort_by), *self.view(dataset, search, metrics, sort_by, *rest))

    def refresh(self, dataset: str, search: str, metrics: list[str], sort_by: str, details: bool, access: str,
                mimic: str, provenance: str, task: str, view_: str, radr_search: str):
        _, banner = self.source.load()
        return (gr.Markdown(banner, visible=bool(banner)),
                *self.tables(dataset, search, metrics, sort_by, details, access, mimic, provenance),
                self.overview(task), self.radrbench(view_, radr_search), self.radrbench_plot())

    # --- Compare -----------------------------------------------------------------------------------------------

    def pair_of(self, dataset: str, task: str, a: str | None, b: str | None):
        """The Compare tab's choices and its models A and B: kept when still on the board, else its first two
        comparable."""
        names = views.compare_choices(self.source.board, dataset, task)
        a = a if a in names else (names[0] if names else None)
        b = b if b in names and b != a else next((n for n in names if n != a), None)
        return names, a, b

    def pair_choices(self, dataset: str, task: str, a: str | None, b: str | None):
        names, a, b = self.pair_of(dataset, task, a, b)
        return gr.Dropdown(choices=names, value=a), gr.Dropdown(choices=names, value=b)

    def compared(self, dataset: str, task: str, a: str | None, b: str | None):
        heading, numbers = compare.compare(self.source.board, self.source.results, dataset, task, a or "", b or "")
        return heading, frame(numbers)

    def open_compare(self, shown: bool, dataset: str, task: str, a: str | None, b: str | None,
                     request: gr.Request):
        """The Compare tab, the first time it is shown: the pair and test set the address names, compared."""
        if shown:
            return (gr.skip(),) * 6 + (True,)
        wanted = _asked(request)
        dataset = wanted["dataset"] if wanted.get("dataset") in dict(map(reversed, self.public)) else dataset
        task = wanted["task"] if wanted.get("task") in views.TASKS else task
        names, a, b = self.pair_of(dataset, task, wanted.get("a") or a, wanted.get("b") or b)
        return (gr.Dropdown(value=dataset), gr.Radio(value=task), gr.Dropdown(choices=names, value=a),
                gr.Dropdown(choices=names, value=b), *self.compared(dataset, task, a, b), True)

    # --- Overview ----------------------------------------------------------------------------------------------

    def overview(self, task: str):
        return frame(views.overview(self.source.board, task))

    def stability(self, dataset: str, task: str):
        title = f"Rank stability: {views.DATASET_TITLES.get(dataset, dataset)}, {views.TASKS.get(task, task)}"
        return stability_figure(views.rank_ranges(self.source.board, dataset, task), title)

    def open_overview(self, shown: bool, task: str, dataset: str):
        """The Overview tab, the first time it is shown: mean ranks and the rank stability figure."""
        return (gr.skip(), gr.skip(), True) if shown else (self.overview(task), self.stability(dataset, task), True)

    # --- Model -------------------------------------------------------------------------------------------------

    def show_model(self, model: str | None):
        """A model's figure, card, numbers and RadRBench-CXR figure; a name the board does not have says so."""
        board, radrbench = self.source.board, self.source.radrbench
        names = model_page.model_names(board, radrbench)
        if model and model not in names:
            card = (f"No model named **{to_markdown(model, 100)}** on this board: choose one above "
                    f"({len(names)} model{'s' * (len(names) != 1)}).")
            nothing = model_page.model_numbers(model_page.model_bars(board, ""))
            hidden = gr.Plot(value=None, visible=False, elem_classes=["figure"])
            return hidden, card, frame(nothing), hidden, *self.studies(None)  # no empty figure under the words
        bars = model_page.model_bars(board, model or "")
        reasoning = radrbench[radrbench["model"] == (model or "")]
        return (gr.Plot(model_figure(bars), visible=True), model_page.model_card(board, model or "", radrbench),
                frame(model_page.model_numbers(bars)),
                gr.Plot(radrbench_figure(reasoning), visible=not reasoning.empty, elem_classes=["figure"]),
                *self.studies(model))

    def studies(self, model: str | None):
        """The Model tab's per-study part (`studies_view`): the dataset and task chooser, what it cannot show and
        why; its figure comes next (`study_figure`), so that the card and bars do not wait for it."""
        shown, why = studies_view.pairs(self.source, model) if model else ([], [])
        lines = [*(["Click (or tap) a bar to list its studies, worst first."] if shown else []),
                 *(f"- {line}" for line in why)]
        note = gr.Markdown("\n".join(lines), visible=bool(lines))
        return gr.Dropdown(choices=shown, value=shown[0][1] if shown else None, visible=bool(shown)), note

    def study_figure(self, model: str | None, key: str | None, drawn: str | None = None):
        """One pair's distributions (none without a pair), the listing emptied until a bar is clicked, and what is
        drawn now (`drawn`: the tab shown again redraws nothing and keeps the studies listed)."""
        if f"{model}|{key}" == drawn:
            return gr.skip(), gr.skip(), drawn
        if not model or not key:
            return gr.HTML(visible=False), gr.Dataframe(visible=False), None
        try:
            one = studies_view.scored(self.source, model or "", key or "")
        except compare.NotComparable as err:
            return gr.HTML(f"<p>{err}</p>", visible=True), gr.Dataframe(visible=False), None
        title = f"{model} · {dict((k, v) for v, k in studies_view.pairs(self.source, model)[0]).get(key, key)}"
        return (gr.HTML(studies_view.figure_html(one, title), visible=True), gr.Dataframe(visible=False),
                f"{model}|{key}")

    def studies_in_bar(self, model: str | None, key: str | None, event: gr.EventData):
        """The studies the clicked bar holds (its id `bin-<metric>-<index>`, sent by the page's script)."""
        try:
            one = studies_view.scored(self.source, model or "", key or "")
        except compare.NotComparable:
            return gr.Dataframe(visible=False)
        shown = studies_view.listed(one, str(getattr(event, "bar", "")))
        return gr.Dataframe(value=shown, visible=True, wrap=True, label=f"The {len(shown):,} studies of the bar "
                            "clicked, worst first")

    def open_model(self, model: str | None, shown: str | None, request: gr.Request):
        """The Model tab when it is shown: the model chosen, else the one the address names (a name the board does
        not have is answered as such), else the board's first; nothing again for the one already shown."""
        wanted = model or _asked(request).get("model")
        names = model_page.model_names(self.source.board, self.source.radrbench)
        if not wanted:
            wanted = names[0] if names else None
        if shown is not None and wanted == shown:
            return (gr.skip(),) * 8
        return (gr.Dropdown(value=wanted if wanted in names else None), *self.show_model(wanted), wanted)

    def chose_model(self, model: str | None):
        return (*self.show_model(model), model)

    def model_choices(self, model: str | None):
        names = model_page.model_names(self.source.board, self.source.radrbench)
        return gr.Dropdown(choices=names, value=model if model in names else None)

    def refreshed(self, model: str | None, dataset: str, task: str):
        return self.model_choices(model), self.stability(dataset, task)

    # --- RadRBench-CXR -----------------------------------------------------------------------------------------

    def radrbench(self, view_: str, search: str):
        return frame(radrbench_table(self.source.radrbench, view_ or "task", search or ""))

    def radrbench_plot(self):
        return radrbench_figure(self.source.radrbench)

    def open_radrbench(self, shown: bool, view_: str, search: str):
        """The RadRBench-CXR tab, the first time it is shown: its table and figure."""
        return (gr.skip(), gr.skip(), True) if shown else (self.radrbench(view_, search), self.radrbench_plot(), True)
