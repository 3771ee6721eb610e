"""The board a first visitor meets (the official tables, `rexrank leaderboard` with nothing named) in a real browser
at 1400 px and on a 390 px phone: compact, proportional, sorting numbers as numbers, explaining its headers, and the
promises of issue 31 item 6."""

import time

from fixtures.board_app import _empty_note, _official_app, _wait_for

from rexrank.board import about, sources, views
from rexrank.board.schema import RANK_BY

# How many lines each match of PATTERN in an element's text takes (the tops of its boxes).
LINES_PER = """e => {
  const walk = document.createTreeWalker(e, NodeFilter.SHOW_TEXT), lines = [];
  for (let node; (node = walk.nextNode());) {
    for (const match of node.data.matchAll(/PATTERN/g)) {
      const range = document.createRange();
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      lines.push(new Set([...range.getClientRects()].map(box => Math.round(box.top))).size);
    }
  }
  return lines;
}"""
# ... each hyphenated word's; each word's (whitespace-separated): a header never breaks inside a word.
LINES_PER_HYPHENATED_WORD = LINES_PER.replace("PATTERN", r"\S*[-\u2011]\S*")
LINES_PER_WORD = LINES_PER.replace("PATTERN", r"\S+")


def test_the_table_is_compact_proportional_sorts_numbers_and_explains_its_headers_at_both_widths(chromium, tmp_path):
    """The board a first visitor sees (the official tables), at 1400 px and on a 390 px phone."""
    from rexrank.board.page import CONTROLS_LABEL, DETAILS_LABEL, PAGES

    demo = _official_app()
    # the columns a first view shows (ReXrank's), the ranking metric's first; the others are ticked in Metric columns
    metrics = [views.TITLES[RANK_BY], *[views.TITLES[m] for m in views.DEFAULT_METRICS if m != RANK_BY]]
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(demo.local_url)
                page.get_by_text("MAIRA-2").first.wait_for()
                page.evaluate("document.fonts.ready")

                def header_row(page=page):
                    return [h.strip() for h in page.locator(".board th:visible").all_inner_texts()]
                assert header_row() == ["Rank", "Rank range", "Model", *metrics]  # no metadata until asked for
                tips = about.metric_tooltips()
                for title in metrics:
                    tip = tips[title]
                    assert page.locator(".board th:visible").filter(has_text=title).first.get_attribute("title") == tip
                cell = page.locator(".board [role=gridcell]:visible").nth(2)
                font = cell.evaluate("e => getComputedStyle(e.querySelector('a') || e).fontFamily")
                assert "Mono" not in font and "monospace" not in font, font
                refresh, title = page.locator("#refresh").bounding_box(), page.locator("h1").first.bounding_box()
                assert refresh["height"] < 48  # a small control, not a panel
                assert refresh["width"] >= 60 and refresh["x"] >= title["x"] + title["width"]  # its word, beside
                if width == 390:  # a phone: fixed columns, a cell breaking only before its CI, none cut
                    assert cell.evaluate("e => getComputedStyle(e).whiteSpace") == "normal"  # the model's words
                    for shown in page.locator(".ranked [role=gridcell]:visible").all()[:8]:
                        assert shown.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), shown.inner_text()
                    assert page.locator("h1").first.evaluate(LINES_PER_HYPHENATED_WORD) == [1, 1]  # not "X-" / "ray"
                    for label in PAGES.values():  # every tab in sight, none behind a menu
                        tab = page.get_by_role("tab", name=label, exact=True)
                        box = tab.bounding_box()
                        assert tab.is_visible() and box and 0 <= box["x"] and box["x"] + box["width"] <= 390, label
                    assert not page.get_by_label("More tabs").is_visible()
                    page.get_by_text(CONTROLS_LABEL).click()  # closed on a phone: the table comes first
                    details = page.get_by_text(DETAILS_LABEL)
                    assert details.bounding_box()["width"] > 200  # not squeezed to a sliver beside the metrics
                    page.goto(demo.local_url + "?tab=model&model=MAIRA-2")  # a figure and a table of numbers
                    page.get_by_role("heading", name="MAIRA-2").wait_for()
                    figure = page.locator(".figure img:visible").first
                    figure.wait_for()
                    box = figure.bounding_box()
                    assert box["width"] >= 700 and box["x"] >= 0  # legible, from its left edge; it scrolls sideways
                    numbers = page.locator(".board [role=gridcell]:visible")
                    numbers.first.wait_for()
                    assert all(c.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
                               for c in numbers.all()[:6])
                    page.screenshot(path=tmp_path / "board-390.png", full_page=True)
                    continue
                rank = page.locator(".board th:visible").filter(has_text="Rank").first
                rank.hover()
                rank.locator("button").last.click()
                page.get_by_text("Sort descending").click()
                ranks = [row[0] for row in views.table(sources.read_board(None), "rexgradient", "findings",
                                                       details=False).attrs["numbers"]]
                want = [str(r) for r in sorted(ranks, reverse=True)]  # 25, 24, ...; as text: 9, 8, ..., 25, 24, ...
                shown = _wait_for(page, lambda rows, want=want: len(rows) >= 10 and
                                  [r[0] for r in rows] == want[:len(rows)])
                assert len(shown) >= 10 and [r[0] for r in shown] == want[:len(shown)]  # the rows drawn so far
                page.get_by_label(DETAILS_LABEL).check()
                deadline = time.monotonic() + 20
                while header_row()[-len(views.DETAILS):] != list(views.DETAILS) and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                assert header_row() == ["Rank", "Rank range", "Model", *metrics, *views.DETAILS]
                page.screenshot(path=tmp_path / "board-1400-details.png", full_page=True)
        finally:
            browser.close()
            demo.close()


# Scrolls the table's own sideways scroller (the nearest box around its cells that scrolls) to its right end.
SCROLL_TABLE_RIGHT = """e => {
  for (let n = e.querySelector('[role=gridcell]'); n && n !== e.parentElement; n = n.parentElement) {
    if (n.scrollWidth > n.clientWidth + 1 && getComputedStyle(n).overflowX !== 'visible') {
      n.scrollLeft = n.scrollWidth; return true; }
  }
  return false;
}"""


def test_the_board_keeps_its_promises_at_both_widths(chromium, tmp_path):
    """Issue 31 item 6, on the board a first visitor meets (the official tables), at 1400 px with a mouse and on a
    390 px touch screen: (a) a click or tap on a metric's header sorts by it, best first, as Sort does, and Rank's
    sorts back; (b) a link to a model's page shows that model's card or a loading note, never another model's, and
    a name the board lacks says so; (c) with Details on, no header breaks inside a word and the Note can be read
    beside its model; (d) the official rows' access and training data filter them, and a filter leaving none says
    so; (f) a header's explanation names a page of the board, and on a touch screen a tap shows it, linking there;
    (g) on a phone the filters are closed and the table starts near the top (about 1,220 px down before)."""
    from rexrank.board.page import CONTROLS_LABEL, DETAILS_LABEL, LOADING

    board = sources.read_board(None)
    tips = about.metric_tooltips()

    def names(dataset="rexgradient", **how):  # the models as views.table orders them
        return list(views.export(board, dataset, "findings", **how)["model"])

    demo = _official_app()
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                touch = width == 390
                page = browser.new_page(viewport={"width": width, "height": 900}, has_touch=touch)

                def press(locator, touch=touch):
                    locator.tap() if touch else locator.click()

                def header(title, page=page):
                    return page.locator(".ranked th:visible").filter(has_text=title).first

                page.goto(demo.local_url)
                rows = _wait_for(page, lambda rows: len(rows) >= 10)
                assert [r[2] for r in rows] == names()[:len(rows)]
                # (g) the filters: open on a desktop, closed on a phone, and the table near the top
                toggle = page.locator("#view-controls > .label-wrap")
                first = page.locator(".ranked [role=gridcell]:visible").first.bounding_box()["y"]
                if touch:
                    deadline = time.monotonic() + 10
                    while "open" in toggle.get_attribute("class") and time.monotonic() < deadline:
                        page.wait_for_timeout(100)
                    assert "open" not in toggle.get_attribute("class") and not page.get_by_label(
                        "Search model or institution").is_visible()
                    first = page.locator(".ranked [role=gridcell]:visible").first.bounding_box()["y"]
                    assert first < 750, first  # 1,222 px before: title, tabs, Dataset, then the table
                else:
                    assert "open" in toggle.get_attribute("class") and first < 700
                page.screenshot(path=tmp_path / f"promises-{width}-first.png", full_page=True)

                # (f) what a header explains, and where that is written: a page of the board, not a repository path
                green = header("GREEN")
                assert green.get_attribute("title") == tips["GREEN"] and "docs/" not in tips["GREEN"]
                assert "About tab" in tips["GREEN"]
                # (a) a click (a tap) on a metric's header sorts by it, best first
                press(green)
                sort = page.locator("#sort-by input")
                want = names(sort_by="green")
                rows = _wait_for(page, lambda rows, w=want: [r[2] for r in rows] == w[:len(rows)] and len(rows) >= 10)
                assert [r[2] for r in rows] == want[:len(rows)] and want != names()
                assert sort.input_value() == "GREEN"
                assert header("GREEN").get_attribute("data-rexrank-sorted") == ""  # the order shown is marked
                assert header("BLEU").get_attribute("data-rexrank-sorted") is None
                tip = page.locator("#rexrank-tip")
                if touch:  # nothing hovers on a touch screen: the tap shows the header's text, linking the page
                    tip.wait_for(state="visible")
                    assert tip.inner_text().startswith(tips["GREEN"])
                    box = tip.bounding_box()
                    assert box["x"] >= 0 and box["x"] + box["width"] <= width
                    page.screenshot(path=tmp_path / f"promises-{width}-tap-header.png", full_page=False)
                    link = tip.get_by_role("link", name="Open the About tab")
                    assert link.get_attribute("href") == "?tab=about"
                    press(link)
                    page.get_by_role("tab", name="About", selected=True).wait_for()
                    page.get_by_role("heading", name="Metrics").wait_for()
                    page.goto(demo.local_url)
                    _wait_for(page, lambda rows: len(rows) >= 10)
                    press(header("GREEN"))
                    _wait_for(page, lambda rows, w=want: [r[2] for r in rows] == w[:len(rows)] and len(rows) >= 10)
                else:  # a mouse hovers (the title above), a click only sorts
                    assert tip.count() == 0 or not tip.is_visible()
                press(header("Rank"))
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == names()[:len(rows)] and len(rows) >= 10)
                assert [r[2] for r in rows] == names()[:len(rows)] and sort.input_value() == "Rank (1/RadCliQ-v1)"

                # (d) the official rows' access and training data, and a filter that leaves none says so
                if touch:  # on a phone from a link: the filters it sets stay in sight
                    page.goto(demo.local_url + "?access=api")
                    rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["GPT4V"])
                    assert "open" in toggle.get_attribute("class")
                else:
                    page.get_by_role("combobox", name="Access", exact=True).click()
                    page.get_by_role("option", name="API", exact=True).click()
                    rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["GPT4V"])
                assert [r[2] for r in rows] == names(filters=views.Filters(access="api")) == ["GPT4V"]
                page.get_by_role("combobox", name="Trained on MIMIC-CXR", exact=True).click()
                page.get_by_role("option", name="yes", exact=True).click()
                says = (f"No row matches Access: API and Trained on MIMIC-CXR: yes: ReXGradient, Findings has "
                        f"{len(names())} rows; set the filters to any to see them.")
                assert _empty_note(page, says) == says
                assert page.locator(".ranked [role=gridcell]:visible").count() == 0
                page.screenshot(path=tmp_path / f"promises-{width}-no-rows.png", full_page=True)
                page.get_by_role("combobox", name="Access", exact=True).click()
                page.get_by_role("option", name="any", exact=True).click()
                page.get_by_role("combobox", name="Trained on MIMIC-CXR", exact=True).click()
                page.get_by_role("option", name="no", exact=True).click()
                want = names(filters=views.Filters(mimic="no"))
                assert "BiomedGPT-IU" in want and "CheXpertPlus-CheX" in want and 0 < len(want) < len(names())
                rows = _wait_for(page, lambda rows, want=want: [r[2] for r in rows] == want)
                assert [r[2] for r in rows] == want and not page.locator(".board-empty:visible").count()

                # (c) Details on: every header's words whole, and the Note read beside its model
                if not page.get_by_label(DETAILS_LABEL).is_visible():
                    page.get_by_text(CONTROLS_LABEL).click()
                page.get_by_label(DETAILS_LABEL).check()
                deadline = time.monotonic() + 20
                while "Note" not in [h.strip() for h in page.locator(".ranked th:visible").all_inner_texts()] \
                        and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                heads = page.locator(".ranked th:visible")
                texts = [h.strip() for h in heads.all_inner_texts()]
                assert texts[-len(views.DETAILS):] == [*views.DETAILS[:-1], "Note"] or "Note" in texts[-1]
                for h in heads.all():
                    content = h.locator(".header-content")
                    assert set(content.evaluate(LINES_PER_WORD)) == {1}, content.inner_text()  # no word broken
                    assert content.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), content.inner_text()  # nor cut
                rows = _wait_for(page, lambda rows, want=want: len(rows) == len(want))
                access, trained = texts.index("Access"), texts.index("Trained on")
                table = {r[2]: r for r in rows}
                assert table["BiomedGPT-IU"][access] == "open weights"
                assert table["BiomedGPT-IU"][trained].startswith("IU X-ray, MedICat")
                note_head = heads.nth(len(texts) - 1)
                assert note_head.bounding_box()["width"] >= 300  # a note is read in a column, not a letter a line
                if touch:  # the table scrolls sideways to the Note's start (its 380 px fill a phone's screen)
                    note_head.evaluate("e => e.scrollIntoView({inline: 'start', block: 'nearest'})")
                else:  # to its end: the first three columns stay in sight
                    assert page.locator(".ranked:visible").first.evaluate(SCROLL_TABLE_RIGHT)
                page.wait_for_timeout(300)
                box = note_head.locator(".header-content").bounding_box()
                assert box["x"] >= 0 and box["x"] + box["width"] <= width, box  # its header, whole in sight
                if not touch:  # on a desktop the rank, its range and the model stay in sight beside the note
                    model = page.locator(".ranked [role=row]:visible").filter(has_text="BiomedGPT-IU").locator(
                        "[role=gridcell]").nth(2)
                    mbox = model.bounding_box()
                    assert 0 <= mbox["x"] and mbox["x"] + mbox["width"] <= width
                    at = model.evaluate("e => { const r = e.getBoundingClientRect(); return e.contains("
                                        "document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2)); }")
                    assert at, "the model's cell is covered by the cells scrolled under it"
                page.screenshot(path=tmp_path / f"promises-{width}-details-note.png", full_page=False)

                # (b) a link to a model's page: that model's card (or a loading note), never another model's
                page.goto(demo.local_url + "?tab=model&model=MedVersa")
                seen, values, deadline = set(), set(), time.monotonic() + 30
                while "MedVersa" not in seen and time.monotonic() < deadline:
                    seen |= {h.strip() for h in page.locator(".gradio-container h3:visible").all_inner_texts()}
                    chosen = page.get_by_label("Model", exact=True)
                    values.add(chosen.input_value() if chosen.count() else "")
                    if page.get_by_text(LOADING.strip("*")).first.is_visible():
                        seen.add("loading")
                    page.wait_for_timeout(50)
                assert "MedVersa" in seen and seen <= {"MedVersa", "loading"}, seen
                assert values <= {"", "MedVersa"}, values
                source = page.get_by_role("link", name="source").first
                assert source.get_attribute("href") == "https://huggingface.co/hyzhou/MedVersa_Internal"
                page.screenshot(path=tmp_path / f"promises-{width}-model-link.png", full_page=False)
                page.goto(demo.local_url + "?tab=model&model=Nobody")
                page.get_by_text("No model named Nobody on this board").wait_for()
                assert page.get_by_label("Model", exact=True).input_value() == ""
                page.screenshot(path=tmp_path / f"promises-{width}-model-unknown.png", full_page=False)
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()
            demo.close()
