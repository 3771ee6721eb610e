"""The demo board in a real browser (Debian's Chromium through Playwright): switching dataset and task, searching,
the Model, Compare and RadRBench-CXR tabs, the Source filter, one CI notation per column, at 1400 px and 390 px."""

import json
import time

import pandas as pd
from fixtures.board_app import _empty_note, _rows, _settled, _wait_for

from rexrank.board import model_page, radrbench, views
from rexrank.board.aggregate import aggregate
from rexrank.board.schema import RADRBENCH_BOARD
from rexrank.demo.board import DRAWN, demo_keys


def test_the_board_in_a_browser_switches_dataset_and_task_and_searches(own_app, chromium, tmp_path):
    client, repo, board = own_app

    def expected(dataset, task, search="", sort_by=None):
        shown = board[(board["dataset"] == dataset) & (board["task"] == task)]
        want = views.table(board, dataset, task, search, sort_by=sort_by)
        names = dict(zip([views.model_cell(m, u) for m, u in zip(shown["model"], shown["url"])], shown["model"]))
        return [[r, names[m], g] for r, m, g in zip(want["Rank"], want["Model"], want["GREEN"])]

    def seen(rows, headers):
        at = {h: i for i, h in enumerate(headers)}
        return [[row[at["Rank"]], row[at["Model"]], row[at["GREEN"]]] for row in rows]

    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(client.src)
            page.get_by_text("Demo-Careful").first.wait_for()
            headers = [h.strip() for h in page.locator("[role=columnheader]:visible").all_inner_texts()]
            assert headers[:3] == ["Rank", "Rank range", "Model"] and "GREEN" in headers
            want = expected("rexgradient", "findings")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            page.screenshot(path=tmp_path / "board-rexgradient-findings.png", full_page=True)

            page.get_by_label("Dataset").click()
            page.get_by_role("option", name="IU-Xray").click()
            want = expected("iu-xray", "findings")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want

            page.get_by_role("tab", name="Findings + Impression").click()
            want = expected("iu-xray", "findings_impression")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want

            search = page.get_by_label("Search model or institution").filter(visible=True)
            search.fill("template")
            want = expected("iu-xray", "findings_impression", "template")
            assert len(want) == 1
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            page.screenshot(path=tmp_path / "board-iu-xray-findings-impression-search.png", full_page=True)

            search.fill("")  # sorted by GREEN's numbers: best first, the imported row (no GREEN) last
            page.get_by_label("Sort by (best first)").click()
            page.get_by_role("option", name="GREEN").click()
            want = expected("iu-xray", "findings_impression", sort_by="green")
            assert seen(_wait_for(page, lambda rows: seen(rows, headers) == want), headers) == want
            assert want[-1][2] == "" and [r for r, _, _ in want] != sorted(r for r, _, _ in want)

            page.get_by_role("tab", name="Overview").click()  # mean ranks, and IU-Xray's rank stability plot
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "overview-iu-xray-stability.png", full_page=True)

            # The model page: card, bars with whiskers, numbers. The tab opens on the board's first model; the
            # chooser is picked from once that has settled, as a reader would (picked while the tab's first answer
            # was still coming, the pick had not shown 20 s later on a loaded CI machine), and the page settles on it.
            page.get_by_role("tab", name="Model").click()
            _settled(page)
            page.get_by_label("Model", exact=True).click()
            page.get_by_role("option", name="Demo-Shuffled").click()
            _settled(page)
            assert page.get_by_role("heading", name="Demo-Shuffled").is_visible()
            assert page.get_by_label("Model", exact=True).input_value() == "Demo-Shuffled"
            assert "model=Demo-Shuffled" in page.url
            assert page.get_by_role("figure", name="Demo-Shuffled · MIMIC-CXR · Findings").is_visible()
            want = model_page.model_numbers(model_page.model_bars(board, "Demo-Shuffled")).values.tolist()
            assert _wait_for(page, lambda rows: rows == want) == want
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "model-demo-shuffled.png", full_page=True)

            page.get_by_role("tab", name="RadRBench-CXR").click()  # accuracy per task type, then per source
            radr = pd.read_parquet(repo / RADRBENCH_BOARD)
            want = radrbench.radrbench_table(radr, "task")
            overall = [["1", "Demo-Reasoner", want["Overall"][0]], ["2", "Demo-Guesser", want["Overall"][1]]]

            def radr_seen(rows):
                return [row[:2] + row[3:4] for row in rows if len(row) > 4]

            assert radr_seen(_wait_for(page, lambda rows: radr_seen(rows) == overall)) == overall
            radr_headers = [h.strip() for h in page.locator("[role=columnheader]:visible").all_inner_texts()]
            assert "Temporal" in radr_headers and "Multi, no options" in radr_headers
            page.locator(".gradio-container img[src^='data:image']:visible").first.wait_for()
            page.screenshot(path=tmp_path / "radrbench-by-task.png", full_page=True)
            page.get_by_text("Source and task").click()
            _wait_for(page, lambda rows: any("MS-CXR-T" in h for h in page.locator(
                "[role=columnheader]:visible").all_inner_texts()))
            page.screenshot(path=tmp_path / "radrbench-by-source.png", full_page=True)
            page.get_by_label("Reasoning (RadRScore)").check()
            reasoner = radrbench.radrbench_table(radr, "radrscore")["RadRScore"][0]
            assert _wait_for(page, lambda rows: any(reasoner in row for row in rows))
            page.screenshot(path=tmp_path / "radrbench-radrscore.png", full_page=True)

            # A hostile model name, put in a card and refreshed in: shown as its text, never run, never a link.
            hostile = '<img src=x onerror="window.pwned=1">**Bold** [x](javascript:alert(1)) $x$ _i_'
            card = repo / "submissions" / "demo-template" / "submission.json"
            card.write_text(json.dumps({**json.loads(card.read_text()), "name": hostile}))
            aggregate(repo, demo_keys())
            dialogs = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            page.get_by_role("tab", name="Leaderboard").click()
            page.get_by_role("button", name="Refresh").click()
            assert any(hostile in row for row in _wait_for(page, lambda rows: any(hostile in r for r in rows)))
            search.fill("onerror")
            rows = _wait_for(page, lambda rows: len(rows) == 1 and hostile in rows[0])
            assert len(rows) == 1 and hostile in rows[0], rows
            assert page.evaluate("window.pwned") is None and dialogs == []
            assert page.locator("img[src='x']").count() == 0 and page.locator("a[href^='javascript']").count() == 0
            page.screenshot(path=tmp_path / "board-hostile-name.png", full_page=True)
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()


def test_the_source_filter_in_a_browser_keeps_generated_rows_labels_them_and_says_when_none_match(app, chromium,
                                                                                                   tmp_path):
    """At 1400 px the Source filter is chosen in its menu, on a 390 px phone it comes from a link (?source=generated):
    either way only the rows the maintainers generated from the model are left, each labelled so (its full words
    on hover), the legend says what each source is, and a filter that leaves no row says so instead of a blank."""

    from rexrank.board.page import DETAILS_LABEL

    client, repo, board = app
    kept = views.table(board, "iu-xray", "findings", filters=views.Filters(source="generated"))
    generated = [m for m, p in zip(board["model"], board["provenance"]) if p == "generated"]
    assert set(generated) == {"Demo-Careful"} and len(kept) == len(set(generated))  # the demo's model the jobs ran
    iu_rows = len(views.table(board, "iu-xray", "findings"))  # the rows the demo makes on a table
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                source = page.get_by_role("combobox", name="Source", exact=True)
                if width == 1400:
                    page.goto(client.src + "?dataset=iu-xray")
                    _wait_for(page, lambda rows: len(rows) == iu_rows)
                    source.click()
                    offered = [t.split("\n")[-1].strip() for t in page.get_by_role("option").all_inner_texts()]
                    # (the chosen one marked ✓); "yours" only on a board of one's own results
                    assert offered == [label for key, label in views.SOURCE_FILTER.items() if key != "yours"]
                    page.get_by_role("option", name="generated by maintainers", exact=True).click()
                    page.wait_for_function("location.search.includes('source=generated')")
                else:
                    page.goto(client.src + "?dataset=iu-xray&source=generated")
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["Demo-Careful"])
                assert [r[2] for r in rows] == ["Demo-Careful"], rows  # Rank, Rank range, Model
                assert source.input_value() == "generated by maintainers"
                assert source.evaluate("e => e.scrollWidth <= e.clientWidth")  # the chosen words whole, not cut
                legend = page.get_by_text("Source says who made a row's numbers")
                assert legend.is_visible() and "generated by maintainers" in legend.inner_text()

                page.get_by_label(DETAILS_LABEL).check()
                headers = page.locator(".board th:visible")
                deadline = time.monotonic() + 20
                while "Source" not in [h.strip() for h in headers.all_inner_texts()] and time.monotonic() < deadline:
                    page.wait_for_timeout(300)
                at = [h.strip() for h in headers.all_inner_texts()].index("Source")
                assert headers.nth(at).get_attribute("title").startswith("Who made the row's numbers: generated by")
                label = page.locator(".board [role=row]:visible").filter(has_text="Demo-Careful").locator(
                    "[role=gridcell]").nth(at)
                label.scroll_into_view_if_needed()  # on the phone the table scrolls sideways to it
                assert label.inner_text().strip() == "generated by maintainers" and label.is_visible()
                box = label.bounding_box()
                assert box and 0 <= box["x"] and box["x"] + box["width"] <= width  # in sight
                deadline = time.monotonic() + 10
                while label.get_attribute("title") is None and time.monotonic() < deadline:
                    page.wait_for_timeout(200)
                assert label.get_attribute("title").startswith("generated by the maintainers from the model: ")
                page.screenshot(path=tmp_path / f"board-source-generated-{width}.png", full_page=True)

                page.get_by_role("combobox", name="Access", exact=True).click()  # Demo-Careful is open weights
                page.get_by_role("option", name="API", exact=True).click()
                says = ("No row matches Access: API and Source: generated by maintainers: IU-Xray, Findings has "
                        f"{iu_rows} rows; set the filters to any to see them.")
                assert _empty_note(page, says) == says
                assert page.locator(".board [role=gridcell]:visible").count() == 0
                page.screenshot(path=tmp_path / f"board-source-none-{width}.png", full_page=True)
                source.click()
                page.get_by_role("option", name="any", exact=True).click()  # API alone keeps Demo-Template
                rows = _wait_for(page, lambda rows: [r[2] for r in rows] == ["Demo-Template"])
                assert [r[2] for r in rows] == ["Demo-Template"] and not page.locator(".board-empty:visible").count()
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()


def test_a_column_writes_its_cis_one_way_at_both_widths(app, chromium, tmp_path):
    """Issue 31 item 6e: every metric column of the demo board (every row with CIs) writes them in one notation, `±`
    or `[low, high]`, on the leaderboard and on a model's page; cell by cell, 43 of its columns mixed the two."""
    client, repo, board = app
    rows = board[(board["dataset"] == "iu-xray") & (board["task"] == "findings")]
    cell_by_cell = {m: {("±" if "±" in t else "[") for v, lo, hi in zip(rows[m], rows[f"{m}_low"], rows[f"{m}_high"])
                        if "±" in (t := views.value_with_ci(v, lo, hi)) or "[" in t} for m in views.TITLES}
    assert any(len(kinds) == 2 for kinds in cell_by_cell.values())  # this view mixed them, cell by cell

    def one_way(page, titles):
        _rows(page)  # settled; then the first table's own (a model's page has its VQA section's below)
        table = page.locator(".board:visible").first
        heads = [" ".join(h.split()).rstrip("▾⋮").strip() for h in table.locator("th:visible").all_inner_texts()]
        cells = [[c.strip().replace("\xa0", " ") for c in row.locator("[role=gridcell]").all_inner_texts()]
                 for row in table.locator("[role=row]:visible").all()]
        cells = [row for row in cells if row]
        checked = 0
        for title in titles:
            at = next(i for i, h in enumerate(heads) if h.startswith(title))
            kinds = {("±" if "±" in r[at] else "[") for r in cells if "±" in r[at] or "[" in r[at]}
            assert len(kinds) <= 1, (title, [r[at] for r in cells])
            checked += bool(kinds)
        return checked

    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(client.src + "?dataset=iu-xray")
                _wait_for(page, lambda rows: len(rows) == len(views.table(board, "iu-xray", "findings")))
                shown = [views.TITLES[m] for m in views.DEFAULT_METRICS]  # the columns a first view shows
                assert one_way(page, shown) == len(shown)
                page.screenshot(path=tmp_path / f"ci-notation-{width}.png", full_page=True)
                page.goto(client.src + "?tab=model&model=Demo-Careful")
                page.get_by_role("heading", name="Demo-Careful").wait_for()
                _wait_for(page, lambda rows: len(rows) == len(views.DATASET_TITLES) * len(views.TASKS))
                drawn = [views.TITLES[m] for m in DRAWN]  # a model's page: every metric it has
                assert one_way(page, drawn) == len(drawn)
                page.close()
        finally:
            browser.close()
