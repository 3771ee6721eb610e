"""The About tab and the columns' hover text: the metrics' from the metric registry, the Source column's from the
board's words for where a row's numbers come from (`views.SOURCES`)."""

from __future__ import annotations

import json

from rexrank.catalog import BOARD_METRICS


def metric_tooltips() -> dict[str, str]:
    """Each board metric's column title -> its hover text, from the metric registry: what it measures, that higher
    is better, and where docs/metrics.md defines it."""
    from rexrank.scorers import metric_class

    tips = {}
    for metric in BOARD_METRICS:
        cls = metric_class(metric.name)
        inverse = " Shown as 1/mean, so that higher is better too." if metric.title.startswith("1/") else ""
        tips[metric.title] = (f"{cls.summary} Higher is better.{inverse} Definition: docs/metrics.md {cls.section}; "
                              "the About tab has the metric table.")
    return tips


def source_tooltips() -> dict[str, str]:
    """The Source column's hover text: its header's (the three kinds, each in full) and each cell's (its kind in
    full), keyed by the text shown."""
    from rexrank.board import views

    header = "Who made the row's numbers: " + "; ".join(
        f"{views.SOURCES[p]} = {views.SOURCE_TITLES[p]}" for p in views.SOURCES) + ". The About tab says more."
    return {"Source": header} | {views.SOURCES[p]: f"{views.SOURCE_TITLES[p]}: {views.SOURCE_HELP[p]}"
                                 for p in views.SOURCES}


def header_tooltips_script() -> str:
    """A `<script>` for the page's head that gives each metric column header its `metric_tooltips` text on hover
    (Gradio's tables have no header tooltips of their own), the Source header and each Source cell theirs
    (`source_tooltips`). The texts are ours, JSON-encoded with `<` escaped, so nothing in them can close the
    script."""
    tips = json.dumps(metric_tooltips() | {"Source": source_tooltips()["Source"]}).replace("<", "\\u003c")
    cells = json.dumps({k: v for k, v in source_tooltips().items() if k != "Source"}).replace("<", "\\u003c")
    return ("<script>(() => { const tips = " + tips + ", cells = " + cells + ";\n"
            "const mark = () => { document.querySelectorAll('.board th').forEach(th => {\n"
            "  const name = Object.keys(tips).find(k => th.textContent.trim().startsWith(k));\n"
            "  if (name && th.title !== tips[name]) th.title = tips[name]; });\n"
            "  document.querySelectorAll('.board [role=gridcell]').forEach(td => {\n"
            "    const tip = cells[td.textContent.trim()];\n"
            "    if (tip && td.title !== tip) td.title = tip; }); };\n"
            "new MutationObserver(mark).observe(document.documentElement, {childList: true, subtree: true});\n"
            "})();</script>")


def about() -> str:
    """The About tab: how rows are ranked, then a row per board metric from the metric registry (what it measures,
    what an empty prediction scores, where docs/metrics.md defines it), then what a signature is, with a real one."""
    from rexrank.board import views
    from rexrank.scorers import metric_class
    from rexrank.scorers.bleu import Bleu2

    rows = []
    for metric in BOARD_METRICS:
        cls = metric_class(metric.name)
        rows.append(f"| {metric.title} | {cls.summary} | {cls.empty_prediction} | docs/metrics.md {cls.section} |")
    example = Bleu2(progress=False).signature().with_bootstrap(1000, 0)
    sources = [f"- **{views.SOURCES[p]}**: {views.SOURCE_TITLES[p]}; {views.SOURCE_HELP[p]}." for p in views.SOURCES]
    return "\n".join([
        "### Ranking",
        "Rows are ranked within each dataset and task by **1/RadCliQ-v1** (higher is better); **Sort by** orders them "
        "by another metric's number, best first, blanks last (the rank stays the 1/RadCliQ-v1 rank). Numbers are "
        "means over the test split's studies with a 95% bootstrap CI (`value ± half-width`, or `[low, high]` when "
        "not symmetric); a blank cell is a metric that was not reported, never 0.",
        "",
        "### Where the numbers come from",
        "Each row's **Source** (a filter above the table, a column under **Details**, a column of the CSV) says who "
        "made its numbers:",
        "",
        *sources,
        "",
        "The maintainers' two kinds carry a 95% CI and a signature on every number and are ranked together (when "
        "made with the same RadCliQ-v1 settings); a submission's result is ranked only as the file the maintainers' "
        "job wrote, whose sha256 their ledger records, so a file a submitter wrote (or changed) is listed unranked. "
        "ReXrank's figures are from rexrank.ai, 2025-09, Zhang et al. Where a published 1/RadCliQ-v1 lies outside "
        "what its own rounded components imply, **Note** says so.",
        "",
        "**Rank range** is how far a rank could move given the 1/RadCliQ-v1 CIs: the best is 1 + the models whose CI "
        "lies wholly above this one's, the worst the number of models whose CI reaches this one's low bound (itself "
        "included). A range like `1–2` means the neighbours are statistically indistinguishable (an imported "
        "number, without a CI, counts as its own interval).",
        "",
        "### Metrics",
        "| Metric | What it measures | An empty prediction scores | Defined in |",
        "|---|---|---|---|",
        *rows,
        "",
        "### Signatures",
        "Every verified number carries a signature in the manner of sacrebleu: the metric and its version, the model "
        "weights at their commit, the settings that change the number, the bootstrap and the package version, e.g. "
        f"BLEU-2's `{example}`. RadCliQ-v1's names each of its components'. Two numbers made with different "
        "RadCliQ-v1 settings are never ranked together: such a row is listed unranked with the reason in **Note**. "
        "A verified number made otherwise than the published figures were (in another precision than fp32, with "
        "weights other than the pinned ones, GREEN by another model than GREEN-RadLlama2-7b, FineRadScore without "
        "the reference's few-shot examples or by a judge that is not a GPT-4 model) is marked **≠**, and **Note** "
        "says how: beside an imported row it is not the same measure.",
    ])
