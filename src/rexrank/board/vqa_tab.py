"""The VQA tab in the Gradio app, and its section of the Model tab: layout, handlers and wiring, kept apart from the
report tabs' (`rexrank.board.app` calls `tab`, `model_section` and `wire`). Its rows are `rexrank.board.vqa`'s. Imported
by `build` only: gradio at the top, so that a handler's gr.Request annotation resolves (as in `answers`)."""

import atexit
import shutil
import tempfile
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pandas as pd

from rexrank.board import vqa
from rexrank.board.answers import unbroken_ci
from rexrank.board.page import LOADING, PAGES, address_js
from rexrank.catalog import VQA_CATEGORIES
from rexrank.text import sanitize_text, to_markdown
from rexrank.vqa.official import shipped

# Each column's width: a number and its CI whole on one line ("0.674 [0.669, 0.678]"), a header a word a line at
# most; the table scrolls sideways on a phone, its rank, model and overall accuracy first.
WIDTHS = {"Rank": "56px", "Model": "170px", "Overall": "150px", **{c: "140px" for c in VQA_CATEGORIES},
          "Failed extractions": "104px", "Source": "180px", "Institution": "140px", "Questions": "96px"}
MODEL_WIDTHS = {"Questions": "200px", "Source": "180px"}  # "private (41,007 questions)" on one line
ADDRESS = {"split": "split", "sort": "sort", "source": "vqa_source"}  # the tab's controls, as the address names them


def _choices(labels: dict[str, str]) -> list[tuple[str, str]]:
    return [(label, key) for key, label in labels.items()]


def frame(shown: pd.DataFrame, widths: dict[str, str] = WIDTHS, **extra) -> gr.Dataframe:
    """The tab's table: its text shown over its numbers (a header's sort orders numbers), a width per column."""
    columns = shown.columns.tolist()
    numeric = set(vqa.NUMERIC) if "numbers" in shown.attrs else set()
    types = ["markdown" if c == "Model" else "number" if c in numeric else "str" for c in columns]
    value = shown
    if numeric:
        value = {"headers": columns, "data": shown.attrs["numbers"],
                 "metadata": {"display_value": [[unbroken_ci(x) for x in row]
                                                for row in shown.to_numpy(dtype=object).tolist()]}}
    return gr.Dataframe(value=value, datatype=types, column_widths=[widths.get(c, "150px") for c in columns], **extra)


class VQAAnswers:
    """The tab's handlers over one board's VQA rows (`vqa.read_vqa`), reread with the page's Refresh."""

    def __init__(self, results):
        self.results = results
        self.rows = vqa.read_vqa(None)  # ReXrank's figures, kept should the board's first read fail
        self.note = ""
        self.exports = Path(tempfile.mkdtemp(prefix="rexrank-vqa-csv-"))  # the view's CSV, rewritten per view
        atexit.register(shutil.rmtree, self.exports, ignore_errors=True)
        self.load()

    def load(self) -> None:
        try:
            self.rows = vqa.read_vqa(self.results)
            left = self.rows.attrs.get("unreadable") or []
            self.note = "" if not left else sanitize_text(
                f"⚠️ {len(left)} VQA result file{'s' * (len(left) != 1)} left out: {'; '.join(left[:3])}", 600)
        except Exception as error:  # the Hub down: the rows read last stay, and the tab says why
            self.note = sanitize_text(f"⚠️ Could not read the VQA results ({type(error).__name__}: {error}); "
                                      "showing the rows read last.", 600)

    def table(self, split: str | None, search: str, sort_by: str | None, source: str | None):
        return frame(vqa.vqa_table(self.rows, split or None, search or "", sort_by or "overall", source or "any"))

    def export_csv(self, split: str | None, search: str, sort_by: str | None, source: str | None):
        """The download under the table: the view's rows, in its order, as numbers (`vqa.export`)."""
        path = self.exports / "rexrank-rexvqa.csv"
        vqa.export(self.rows, split or None, search or "", sort_by or "overall", source or "any").to_csv(
            path, index=False)
        return gr.DownloadButton(value=str(path))

    def open(self, shown: bool, split, search, sort_by, source, request: gr.Request):
        """The tab, the first time it is shown: the question set, order and source the address names (anything
        else it names is ignored), and its table."""
        if shown:
            return (gr.skip(),) * 5 + (True,)
        wanted = dict(request.query_params) if request else {}
        splits = [s for _, s in vqa.splits(self.rows)]
        split = wanted.get(ADDRESS["split"]) if wanted.get(ADDRESS["split"]) in splits else split
        sort_by = wanted.get(ADDRESS["sort"]) if wanted.get(ADDRESS["sort"]) in vqa.SORTS else sort_by
        source = wanted.get(ADDRESS["source"]) if wanted.get(ADDRESS["source"]) in vqa.SOURCE_FILTER else source
        return (gr.Dropdown(choices=vqa.splits(self.rows), value=split), gr.Dropdown(value=sort_by),
                gr.Dropdown(value=source), self.table(split, search, sort_by, source),
                gr.Markdown(self.note, visible=bool(self.note)), True)

    def refresh(self, split, search, sort_by, source):
        self.load()
        return self.table(split, search, sort_by, source), gr.Markdown(self.note, visible=bool(self.note))

    def model_section(self, model: str | None):
        """The Model tab's VQA section: the model's numbers per question set, hidden for a model without any."""
        numbers = vqa.model_vqa(self.rows, model or "")
        if not model or numbers.empty:
            return gr.Markdown(visible=False), gr.Dataframe(visible=False)
        heading = (f"#### ReXVQA\n{to_markdown(model, 100)}'s accuracy on ReXVQA's questions, overall and per "
                   "category (95% CIs on the maintainers' numbers; ReXrank's figures as published have none); the "
                   "VQA tab ranks it.")
        return gr.Markdown(heading, visible=True), frame(numbers, WIDTHS | MODEL_WIDTHS, visible=True)


def tab(ui: SimpleNamespace, source) -> None:
    """The VQA tab, beside the report tabs: its controls, table and what it shows."""
    ui.vqa = VQAAnswers(source.results)
    splits = vqa.splits(ui.vqa.rows)
    with gr.Tab(PAGES["vqa"], id="vqa") as ui.pages["vqa"]:
        with gr.Row(equal_height=False):
            ui.vqa_split = gr.Dropdown(splits, value=splits[0][1] if splits else None, label="Questions", scale=2,
                                       min_width=240)
            ui.vqa_sort = gr.Dropdown(_choices(vqa.SORTS), value="overall", label="Sort by (best first)", scale=1,
                                      min_width=200)
            ui.vqa_source = gr.Dropdown(_choices(vqa.SOURCE_FILTER), value="any", label="Source", scale=1,
                                        min_width=200)
            ui.vqa_search = gr.Textbox(label="Search model or institution", scale=2, min_width=200)
        ui.vqa_note = gr.Markdown(visible=False)
        ui.vqa_table = gr.Dataframe(label="ReXVQA accuracy (95% CIs on the maintainers' numbers)", value=None,
                                    interactive=False, wrap=True, elem_classes=["board", "vqa"])
        ui.vqa_download = gr.DownloadButton("Download this view (CSV: every category, with CIs)", size="sm",
                                            elem_classes=["board-download"])
        gr.Markdown(vqa.ABOUT + "\n" + to_markdown(shipped()["attribution"], 600).replace("\\", ""))
        # inside the tab: a component between two tabs in gr.Tabs shifted the next tab's label (About read "Model")
        ui.vqa_shown = gr.State(False)


def model_section(ui: SimpleNamespace) -> None:
    """The Model tab's VQA section (filled when a model with VQA results is shown)."""
    ui.model_vqa_note = gr.Markdown(LOADING, visible=False)
    ui.model_vqa = gr.Dataframe(visible=False, interactive=False, wrap=True, elem_classes=["board"])


def wire(ui: SimpleNamespace) -> None:
    """The tab's first showing, controls (each rewrites the address), the page's Refresh, the Model tab's section."""
    view = [ui.vqa_split, ui.vqa_search, ui.vqa_sort, ui.vqa_source]
    csv = dict(fn=ui.vqa.export_csv, inputs=view, outputs=ui.vqa_download, api_visibility="private")
    ui.pages["vqa"].select(ui.vqa.open, [ui.vqa_shown, *view],
                           [ui.vqa_split, ui.vqa_sort, ui.vqa_source, ui.vqa_table, ui.vqa_note, ui.vqa_shown],
                           api_visibility="private").then(**csv)
    for key, control in (("split", ui.vqa_split), ("sort", ui.vqa_sort), ("source", ui.vqa_source)):
        control.input(None, control, None, js=address_js(ADDRESS[key]))
    ui.vqa_sort.input(ui.vqa.table, view, ui.vqa_table, api_name="vqa").then(**csv)  # also the tab's API
    ui.vqa_split.input(ui.vqa.table, view, ui.vqa_table, api_visibility="private")
    ui.vqa_split.input(ui.vqa.export_csv, view, ui.vqa_download, api_name="vqa_export")  # the CSV's API
    ui.vqa_source.input(ui.vqa.table, view, ui.vqa_table, api_visibility="private").then(**csv)
    ui.vqa_search.change(ui.vqa.table, view, ui.vqa_table, api_visibility="private").then(**csv)
    ui.refresh.click(ui.vqa.refresh, view, [ui.vqa_table, ui.vqa_note], api_visibility="private").then(**csv)
    ui.model.change(ui.vqa.model_section, ui.model, [ui.model_vqa_note, ui.model_vqa], api_name="model_vqa")
