"""The About tab and the columns' hover text: the metrics' from the metric registry, for every column the board can
show (`schema.METRICS`: ReXrank's eight first, then every other metric rexrank scores), the Source column's from the
board's words for where a row's numbers come from (`views.SOURCES`)."""

from __future__ import annotations

import json

from rexrank.board.schema import METRICS

ABOUT_LINK = "?tab=about"  # the About tab, as a link opens it (the address carries the tab)


def metric_tooltips() -> dict[str, str]:
    """Each board metric's column title (every column a visitor can tick) -> its hover (and, on a touch screen, tap)
    text, from the metric registry: what it measures, that higher is better, and that the About tab, a page of this
    board, has its definition."""
    from rexrank.scorers import inverted, shown, spec

    tips = {}
    for metric in METRICS:
        text = spec(metric).summary  # some summaries say the 1/mean and the direction themselves: once each
        if inverted(metric) and "1 / the mean" not in text:
            text += " The board shows 1 / the mean."
        if "higher is better" not in text.lower():
            text += " Higher is better."
        tips[shown(metric)] = f"{text} The About tab has its definition and the metric table."
    return tips


def source_tooltips() -> dict[str, str]:
    """The Source column's hover text: its header's (the three kinds, each in full) and each cell's (its kind in
    full), keyed by the text shown."""
    from rexrank.board import views

    header = "Who made the row's numbers: " + "; ".join(
        f"{views.SOURCES[p]} = {views.SOURCE_TITLES[p]}" for p in views.SOURCES) + ". The About tab says more."
    return {"Source": header} | {views.SOURCES[p]: f"{views.SOURCE_TITLES[p]}: {views.SOURCE_HELP[p]}"
                                 for p in views.SOURCES}


def header_sorts() -> dict[str, str]:
    """The leaderboard's column titles a click sorts by -> the Sort control's value: Rank (1/RadCliQ-v1 rank) and
    each metric (its number, best first)."""
    from rexrank.board import views

    return {"Rank": "rank"} | {title: name for name, title in views.TITLES.items()}


# The page's script for the tables' headers and cells (`header_tooltips_script` fills in the __NAMES__).
_SCRIPT = """(() => { const tips = __TIPS__, cells = __CELLS__, sorts = __SORTS__, about = __ABOUT__;
const label = th => (th.querySelector('.header-content') ?? th).textContent.trim();
const sortedAs = () => {  // the Sort control's choice, as a column title
  const shown = document.querySelector('#sort-by input')?.value ?? '';
  return shown.startsWith('Rank') ? 'Rank' : shown; };
const mark = () => {
  const sorted = sortedAs();
  document.querySelectorAll('.board th').forEach(th => {
    const name = label(th), tip = tips[name];
    if (tip && th.title !== tip) th.title = tip;
    const on = th.closest('.ranked') !== null && Object.hasOwn(sorts, name) && name === sorted;
    if (on !== th.hasAttribute('data-rexrank-sorted')) th.toggleAttribute('data-rexrank-sorted', on);
  });
  document.querySelectorAll('.board [role=gridcell]').forEach(td => {
    const tip = cells[td.textContent.trim()];
    if (tip && td.title !== tip) td.title = tip;
  });
};
new MutationObserver(mark).observe(document.documentElement, {childList: true, subtree: true});
let pointer = 'mouse';  // how the last press came: a touch or a pen shows the note (a mouse hovers instead)
document.addEventListener('pointerdown', e => { pointer = e.pointerType; }, true);
const note = () => document.getElementById('rexrank-tip') ?? (() => {
  const box = document.createElement('div');
  box.id = 'rexrank-tip'; box.setAttribute('role', 'tooltip'); box.hidden = true;
  document.body.appendChild(box); return box; })();
const show = (at, text) => {
  const box = note(), link = document.createElement('a');
  box.textContent = text + ' '; link.href = about; link.textContent = 'Open the About tab';
  box.appendChild(link); box.hidden = false;
  const r = at.getBoundingClientRect(), room = document.documentElement.clientWidth - box.offsetWidth - 4;
  box.style.top = (r.bottom + window.scrollY + 4) + 'px';
  box.style.left = (window.scrollX + Math.max(4, Math.min(r.left, room))) + 'px';
};
document.addEventListener('click', e => {
  if (!e.isTrusted || e.target.closest('#rexrank-tip')) return;  // (the click the script itself gives #header-sort)
  const th = e.target.closest('.board th'), td = e.target.closest('.board [role=gridcell]');
  const tip = th ? tips[label(th)] : td ? cells[td.textContent.trim()] : undefined;
  if (tip && pointer !== 'mouse') show(th ?? td, tip); else note().hidden = true;
  if (!th || !th.closest('.ranked') || e.target.closest('button, a')) return;
  const key = sorts[label(th)];
  if (key === undefined) return;
  window.rexrankHeaderSort = key;
  document.getElementById('header-sort')?.click();
}, true);
})();"""


def header_tooltips_script() -> str:
    """A `<script>` for the page's head. It gives each metric column header its `metric_tooltips` text, the Source
    header and each Source cell theirs (`source_tooltips`), as hover text (`title`; Gradio's tables have no header
    tooltips of their own) and, on a touch screen where nothing hovers, as a note under what was tapped, with a link
    to the About tab. In the leaderboard's tables (`.ranked`) a click or a tap on Rank's or a metric's header sorts
    by it, as the Sort control does: it sets that control through the hidden `#header-sort` button, and the header of
    the order shown is marked `data-rexrank-sorted`. The texts are ours, JSON-encoded with `<` escaped, so nothing in
    them can close the script."""

    def encoded(value) -> str:
        return json.dumps(value).replace("<", "\\u003c")

    filled = {"__TIPS__": metric_tooltips() | {"Source": source_tooltips()["Source"]},
              "__CELLS__": {k: v for k, v in source_tooltips().items() if k != "Source"},
              "__SORTS__": header_sorts(), "__ABOUT__": ABOUT_LINK}
    script = _SCRIPT
    for name, value in filled.items():
        script = script.replace(name, encoded(value))
    return f"<script>{script}</script>"


def about() -> str:
    """The About tab: how rows are ranked, then a row per board metric (every column it can show) from the metric
    registry (what it measures, what an empty prediction scores, where docs/metrics.md defines it), then what a
    signature is, with a real one."""
    from rexrank.board import views
    from rexrank.scorers import METRICS as REGISTRY
    from rexrank.scorers import shown, spec
    from rexrank.scorers.bleu import Bleu2

    rows = []
    for metric in METRICS:  # every column the board can show, in its order
        cls = spec(metric)
        rows.append(f"| {shown(metric)} | {cls.summary} | {cls.empty_prediction} | docs/metrics.md {cls.section} |")
    # which tokenisation and implementation each number is, other tools' names beside: a paper's "BLEU" or "ROUGE-L"
    # is often another number than the column of the same name
    conventions = [f"- **{shown(m)}**: {spec(m).convention}" for m in REGISTRY if spec(m).convention]
    # BLEU-2's signature needs no runtime: made without __init__, which imports torch (the Space installs none, and
    # importing it was 1.3 s of every start)
    example = object.__new__(Bleu2).signature().with_bootstrap(1000, 0)
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
        "The board ranks what the maintainers made: the rows their job generated by running the submitted model, and "
        "ReXrank's figures. Predictions a submitter uploaded are self-reported: the maintainers re-score them and "
        "show them with their CIs, marked †, but a near-copy check is lexical, and a paraphrased copy of a public "
        "test set's references would pass it, so they are not ranked with the others (as ReXrank and the Open LLM "
        "Leaderboard rank only what they ran themselves); **Source: self-reported** ranks them among themselves. "
        "The maintainers' numbers carry a 95% CI and a signature on every number and are ranked only when made with "
        "the board's RadCliQ-v1 settings; a submission's result counts only as the file the maintainers' job wrote, "
        "whose sha256 their ledger records in an entry their job signed, so a file a submitter wrote (or changed) is "
        "listed unranked, and a ledger record a pull request wrote counts for nothing. "
        "ReXrank's figures are from rexrank.ai, 2025-09, Zhang et al. Where a published 1/RadCliQ-v1 lies outside "
        "what its own rounded components imply, **Note** says so. An imported row is shown only as the figure "
        "rexrank ships under its name or as bytes a maintainer recorded; any other file there is left out of the "
        "board (shown, it would read as ReXrank's published number), whoever merged it. A judged value (GREEN, "
        "FineRadScore) is blank, and **Note** says why, while any of its verdicts of no clinically significant error "
        "is contradicted by CheXbert's labels of the same study (or, without CheXbert, by RadGraph), or while no "
        "deterministic metric checked them, until the maintainers review that file; the row keeps its rank, which "
        "no judge makes.",
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
        "#### Conventions",
        "Which tokenisation and which implementation each lexical number follows; other tools' names for theirs "
        "beside it. Compare a number only with one made the same way:",
        "",
        *conventions,
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
