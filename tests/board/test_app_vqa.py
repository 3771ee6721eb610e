"""The app's VQA tab, through its API and in a browser at both widths."""

import re

from fixtures.board_app import _cells, _wait_for

from rexrank.board import views, vqa
from rexrank.catalog import VQA_CATEGORIES, VQA_PRIVATE
from rexrank.vqa.official import shipped


def test_the_vqa_tab_through_the_api(app):
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    for split in [s for _, s in vqa.splits(frame)]:
        for sort_by in ("overall", "presence", "failed"):
            got = _cells(client.predict(split, "", sort_by, "any", api_name="/vqa"))
            want = vqa.vqa_table(frame, split, "", sort_by)
            assert got.columns.tolist() == want.columns.tolist() and got.values.tolist() == want.values.tolist()
    published = _cells(client.predict(VQA_PRIVATE["split"], "", "overall", "published", api_name="/vqa"))
    rows = shipped()["rows"]
    assert len(published) == len(rows)  # ReXrank's table, each figure as shipped (4 decimals, no CI)
    assert [float(x) for x in published["Overall"]] == [r["overall"] for r in rows]
    for category in VQA_CATEGORIES:
        assert [float(x) for x in published[category]] == [r["categories"][category] for r in rows]
    note, section = client.predict("Demo-Careful", api_name="/model_vqa")  # the Model tab's section
    assert "ReXVQA" in note["value"] and section["visible"] is not False
    assert _cells(section).values.tolist() == vqa.model_vqa(frame, "Demo-Careful").values.tolist()
    note, section = client.predict("Demo-Template", api_name="/model_vqa")  # no VQA result: no section
    assert note.get("visible") is False and section.get("visible") is False


def _vqa_name(cell: str) -> str:
    """A Model cell's markdown as the page shows it: the name, unescaped, without its link."""
    return re.sub(r"\\(.)", r"\1", re.sub(r"^\[(.*)\]\([^)]*\)$", r"\1", cell))


def test_the_vqa_tab_in_a_browser_at_both_widths(app, chromium, tmp_path):
    """A link opens the VQA tab sorted and filtered as it says; the rows are the table's, ReXrank's figures as
    published beside the generated row with its CI; on a 390 px phone rank, model and overall accuracy are whole in
    the first screen and no cell is cut."""
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    with chromium as browser:
        try:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(client.src + "?tab=vqa&sort=presence")
                page.get_by_role("tab", name="VQA", selected=True).wait_for()
                want = vqa.vqa_table(frame, sort_by="presence")
                expect = [[r, _vqa_name(m), o.replace("\xa0", " ")] for r, m, o in
                          zip(want["Rank"], want["Model"], want["Overall"])]
                rows = _wait_for(page, lambda rows, e=expect: [r[:3] for r in rows] == e)
                assert [r[:3] for r in rows] == expect
                assert page.get_by_label("Sort by (best first)").filter(visible=True).first.input_value() == \
                    vqa.SORTS["presence"]
                heads = [" ".join(h.split()) for h in page.locator(".vqa th:visible").all_inner_texts()]
                assert heads[:4] == ["Rank", "Model", "Overall", "Source"] and all(c in heads for c in VQA_CATEGORIES)
                source = heads.index("Source")
                assert {r[source] for r in rows} == {views.SOURCES["imported"], views.SOURCES["generated"]}
                cut = page.locator(".vqa [role=gridcell]:visible").evaluate_all(
                    "es => es.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.innerText)")
                assert cut == []
                if width == 390:  # rank, model and overall whole in the phone's first screen
                    for cell in page.locator(".vqa [role=row]:visible").nth(2).locator("[role=gridcell]").all()[:3]:
                        box = cell.bounding_box()
                        assert box["x"] >= 0 and box["x"] + box["width"] <= width, cell.inner_text()
                page.screenshot(path=tmp_path / f"vqa-{width}.png", full_page=True)
                page.get_by_role("combobox", name="Source", exact=True).filter(visible=True).first.click()
                page.get_by_role("option", name=views.SOURCES["generated"]).click()
                page.wait_for_function("location.search.includes('vqa_source=generated')")
                kept = vqa.vqa_table(frame, sort_by="presence", source="generated")
                rows = _wait_for(page, lambda rows, k=kept: len(rows) == len(k))
                assert [r[1] for r in rows] == [_vqa_name(m) for m in kept["Model"]]
                page.close()
            print(f"screenshots in {tmp_path}")
        finally:
            browser.close()
