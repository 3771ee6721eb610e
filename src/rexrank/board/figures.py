"""The board's figures, as matplotlib Figures made without pyplot (no global state): a model's bars, RadRBench-CXR
accuracy per task type, and rank stability. A model's name is text in them, never TeX."""

from __future__ import annotations

import pandas as pd

from rexrank.board import views
from rexrank.board.radrbench import RADRBENCH_TASKS, radrbench_bars
from rexrank.text import sanitize_text


def model_figure(bars: pd.DataFrame):
    """A model's bars (`model_bars`): a panel per metric, a bar per dataset and task, 95% CI
    whiskers (none where a number has no CI). A matplotlib Figure, made without pyplot (no global state)."""
    from matplotlib.figure import Figure

    metrics = list(dict.fromkeys(bars["metric"]))
    columns = 4
    figure = Figure(figsize=(14, 3.2 * max(1, -(-len(metrics) // columns))), layout="constrained")
    if not metrics:
        figure.text(0.5, 0.5, "No numbers for this model", ha="center", va="center")
        return figure
    axes = figure.subplots(-(-len(metrics) // columns), columns, squeeze=False).ravel()
    datasets = [d for d in views.DATASET_TITLES.values() if d in set(bars["dataset"])] + sorted(
        set(bars["dataset"]) - set(views.DATASET_TITLES.values()))
    tasks = list(dict.fromkeys(bars["task"]))
    width = 0.8 / max(1, len(tasks))
    for ax, metric in zip(axes, metrics):
        shown = bars[bars["metric"] == metric]
        for t, (task, colour) in enumerate(zip(tasks, ("#4C72B0", "#DD8452", "#55A868", "#C44E52"))):
            rows = shown[shown["task"] == task]
            x = [datasets.index(d) + (t - (len(tasks) - 1) / 2) * width for d in rows["dataset"]]
            ax.bar(x, rows["value"], width, color=colour, label=task)
            ci = (rows["err_low"].notna() & rows["err_high"].notna()).to_numpy()  # no whisker without a CI
            ax.errorbar([v for v, c in zip(x, ci) if c], rows["value"][ci], fmt="none", capsize=3, elinewidth=1,
                        ecolor="#222", yerr=[rows["err_low"][ci].to_numpy(), rows["err_high"][ci].to_numpy()])
        ax.set_title(metric, fontsize=11)
        ax.set_xticks(range(len(datasets)), [d.replace(" ", "\n") for d in datasets], fontsize=8)
        ax.tick_params(axis="y", labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside upper center", ncols=len(tasks), frameon=False)
    return figure


def radrbench_figure(table: pd.DataFrame, top: int = 12):
    """Accuracy per RadRBench-CXR task type (over every source), a bar per model (the `top` best overall), 95% CI
    whiskers. A matplotlib Figure, made without pyplot."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 3.6), layout="constrained")
    ax = figure.subplots()
    overall = table[(table["source"] == "all") & (table["task"] == "all")].sort_values("accuracy", ascending=False)
    models = overall["model"].head(top).tolist()
    if not models:
        ax.text(0.5, 0.5, "No RadRBench-CXR results", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return figure
    tasks = list(RADRBENCH_TASKS.values())
    width = 0.8 / len(models)
    for m, model in enumerate(models):
        bars = radrbench_bars(table, model)
        x = [tasks.index(t) + (m - (len(models) - 1) / 2) * width for t in bars["task"]]
        ax.bar(x, bars["accuracy"], width, label=sanitize_text(model, 40))
        ax.errorbar(x, bars["accuracy"], yerr=[bars["err_low"], bars["err_high"]], fmt="none", capsize=3,
                    elinewidth=1, ecolor="#222")
    ax.set_xticks(range(len(tasks)), tasks, fontsize=9)
    ax.set_ylim(0, 1.05)
    ax.set_title("RadRBench-CXR accuracy per task type (all sources), 95% CI", fontsize=11, pad=14)
    ax.set_ylabel("accuracy")
    ax.grid(axis="y", alpha=0.3)
    legend = figure.legend(loc="outside right upper", fontsize=8, frameon=False)
    for text in legend.get_texts():
        text.set_parse_math(False)  # a `$` in a model's name is text, not TeX
    return figure


def stability_figure(ranges: pd.DataFrame, title: str, top: int = 30):
    """Rank stability (`views.rank_ranges`): each ranked model's 1/RadCliQ-v1 and 95% CI, best first,
    labelled with its rank range; CIs that overlap are neighbours the data cannot tell apart. The first `top` only."""
    from matplotlib.figure import Figure

    shown = ranges.head(top)
    figure = Figure(figsize=(10, 1.2 + 0.38 * max(1, len(shown))), layout="constrained")
    ax = figure.subplots()
    ax.set_title(title + (f" (first {top} of {len(ranges)})" if len(ranges) > top else ""), fontsize=11)
    if shown.empty:
        ax.text(0.5, 0.5, "No ranked models", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return figure
    y = list(range(len(shown)))
    fixed, ci = (shown["best"] == shown["worst"]).to_numpy(), shown["ci"].to_numpy(dtype=bool)
    kinds = ((fixed & ci, "o", "#4C72B0", "rank certain"),
             (~fixed & ci, "o", "#DD8452", "rank could change (CIs overlap)"),
             (~ci, "D", "#8C8C8C", "as published, no CI: how certain is unknown"))
    for at, marker, colour, label in kinds:
        if at.any():
            ax.errorbar(shown["value"][at], [v for v, a in zip(y, at) if a], fmt=marker, color=colour, capsize=3,
                        xerr=[(shown["value"] - shown["low"])[at], (shown["high"] - shown["value"])[at]], label=label,
                        mfc="none" if marker == "D" else colour)
    labels = [f"{int(r)}. {sanitize_text(m, 40)}  [{rr}]"
              for r, m, rr in zip(shown["rank"], shown["model"], shown["Rank range"])]
    ax.set_yticks(y, labels, fontsize=9)
    for label in ax.get_yticklabels():
        label.set_parse_math(False)  # a `$` in a model's name is text, not TeX
    ax.invert_yaxis()
    ax.set_xlabel("1/RadCliQ-v1 (higher is better), 95% CI")
    ax.grid(axis="x", alpha=0.3)
    figure.legend(loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    return figure


def distribution_figure(tables: list[tuple[str, pd.DataFrame]], metrics: list[str], title: str, bins: int = 20):
    """Each metric's per-study distribution, a panel per metric: the first table's histogram as bars, each bar's gid
    `bin-<metric>-<i>` (the board lists a bar's studies when it is clicked: `rexrank.studies.in_bin`), a second
    table's (`rexrank studies --vs`) as an outline over the same bins. `rexrank studies --plot` writes it as is."""
    import textwrap

    import numpy as np
    from matplotlib.figure import Figure

    from rexrank.scorers import spec
    from rexrank.studies import edges, lower_is_better

    columns = min(4, max(1, len(metrics)))
    rows = -(-max(1, len(metrics)) // columns)
    width = max(6.0, 3.6 * columns)
    figure = Figure(figsize=(width, 1.2 + 2.6 * rows), layout="constrained")
    title_text = figure.suptitle(textwrap.fill(title, int(width * 11)), fontsize=11)
    title_text.set_parse_math(False)  # a model's name is text, never TeX
    if not metrics:
        figure.text(0.5, 0.5, "No per-study scores", ha="center", va="center")
        return figure
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        cut = edges(pd.concat([table[metric] for _, table in tables[:2]]), bins)  # one set of bins for both
        for n, (label, table) in enumerate(tables[:2]):
            values = table[metric].to_numpy(dtype=float)
            counts, _ = np.histogram(values[np.isfinite(values)], bins=cut)
            if n == 0:
                for i, bar in enumerate(ax.bar(cut[:-1], counts, width=np.diff(cut), align="edge", color="#4C72B0",
                                               edgecolor="white", linewidth=0.5, label=label)):
                    bar.set_gid(f"bin-{metric}-{i}")
            else:
                ax.stairs(counts, cut, color="#DD8452", linewidth=1.5, label=label)
        ax.set_title(spec(metric).title, fontsize=10)
        ax.set_xlabel("per-study score" + (" (lower is better)" if lower_is_better(metric) else ""), fontsize=8)
        ax.tick_params(labelsize=8)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("studies", fontsize=8)
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    if len(tables) > 1:
        handles, labels = axes[0].get_legend_handles_labels()
        names = [label for label, _ in tables]
        order = sorted(range(len(labels)), key=lambda i: names.index(labels[i]) if labels[i] in names else i)
        legend = figure.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center",
                               ncols=2, fontsize=8, frameon=False)
        for text in legend.get_texts():
            text.set_parse_math(False)
    return figure


def figure_svg(figure) -> str:
    """A figure as inline SVG (its bars' gids kept as element ids), for a page to show and click on."""
    import io

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg"):]
