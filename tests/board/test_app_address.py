"""The address carries the board's view (dataset, task, sort, filters, tab, model), and a link opens it."""

import re

from fixtures.board_app import _wait_for

from rexrank.board import views


def test_the_address_carries_the_view_and_a_link_opens_it(app, chromium):
    from rexrank.board.compare import compare

    client, repo, board = app
    with chromium as browser:  # the module's Chromium, pages of this test's own
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(client.src + "?dataset=iu-xray&task=findings_impression")
            iu = board[(board["dataset"] == "iu-xray") & (board["task"] == "findings_impression")]
            page.get_by_role("tab", name="Findings + Impression", selected=True).wait_for()
            rows = _wait_for(page, lambda rows: len(rows) == len(iu))
            assert page.get_by_label("Dataset").input_value() == "IU-Xray" and len(rows) == len(iu)

            page.goto(client.src + "?dataset=iu-xray&access=api&source=verified")  # the filters, from a link
            kept = views.export(board, "iu-xray", "findings", filters=views.Filters(access="api", source="verified"))
            assert 0 < len(kept) < len(board[(board["dataset"] == "iu-xray") & (board["task"] == "findings")])
            rows = _wait_for(page, lambda rows: len(rows) == len(kept))
            assert [row[2] for row in rows] == list(kept["model"])  # Rank, Rank range, Model
            assert page.get_by_role("combobox", name="Access", exact=True).input_value() == "API"
            source = page.get_by_role("combobox", name="Source", exact=True)
            assert source.input_value() == views.SOURCE_FILTER["verified"]

            page.goto(client.src + "?tab=model&model=Demo-Template")
            page.get_by_role("tab", name="Model", selected=True).wait_for()
            page.get_by_role("heading", name="Demo-Template").wait_for()

            page.goto(client.src + "?tab=compare&dataset=iu-xray&task=findings&a=Demo-Shuffled&b=Demo-Careful")
            page.get_by_role("tab", name="Compare", selected=True).wait_for()
            # the pair as the heading names it, each marked as the board marks its source (as the page renders it)
            heading, _ = compare(board, str(repo), "iu-xray", "findings", "Demo-Shuffled", "Demo-Careful")
            pair = re.sub(r"\\(.)", r"\1", heading[heading.index("A = "):heading.index(";")])
            assert pair.startswith(f"A = Demo-Shuffled {views.MARK} (") and ", B = Demo-Careful" in pair, pair
            page.get_by_text(pair).wait_for()
            assert page.get_by_label("Test set").input_value() == "IU-Xray"

            page.goto(client.src + "?tab=%3Cscript%3E&dataset=nowhere&model=%22%3E%3Cimg%3E&access=%3Cimg%3E"
                      "&source=imported%22")  # ignored, not run
            page.get_by_role("tab", name="Leaderboard", selected=True).wait_for()
            assert page.get_by_label("Dataset").input_value() == views.DATASET_TITLES[next(iter(views.DATASET_TITLES))]
            assert [page.get_by_role("combobox", name=name, exact=True).input_value()
                    for name in ("Access", "Source")] == ["any", "any"]

            page.get_by_label("Dataset").click()
            page.get_by_role("option", name="CheXpert Plus").click()
            page.get_by_role("combobox", name="Access", exact=True).click()
            page.get_by_role("option", name="open weights").click()
            page.wait_for_function("location.search.includes('access=open-weights')")
            kept = views.export(board, "chexpert-plus", "findings", filters=views.Filters(access="open-weights"))
            assert [row[2] for row in _wait_for(page, lambda rows: len(rows) == len(kept))] == list(kept["model"])
            page.get_by_role("tab", name="Overview").click()
            page.wait_for_function("location.search.includes('tab=overview')")
            assert "dataset=chexpert-plus" in page.url and "tab=overview" in page.url
            page.goto(page.url)  # the link, opened again
            page.get_by_role("tab", name="Overview", selected=True).wait_for()
        finally:
            browser.close()
