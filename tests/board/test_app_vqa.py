"""The app's VQA tab, through its API and in a browser at both widths."""

import re

import pandas as pd
import pytest
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


def test_the_vqa_view_downloads_as_csv_with_numbers(app):
    """The VQA tab's "Download this view (CSV)": the rows the view shows, in its order, as numbers: the maintainers'
    figures with their CI bounds, ReXrank's published ones without; a view's filters keep the same rows."""
    client, repo, board = app
    frame = vqa.read_vqa(repo)
    for split in [s for _, s in vqa.splits(frame)]:
        for sort_by, source in (("overall", "any"), ("presence", "generated"), ("failed", "published")):
            button = client.predict(split, "", sort_by, source, api_name="/vqa_export")
            got = pd.read_csv(button["value"], keep_default_na=True)
            shown = vqa.vqa_table(frame, split, "", sort_by, source)
            want = vqa.export(frame, split, "", sort_by, source)
            assert got.columns.tolist() == want.columns.tolist() and len(got) == len(shown)
            assert got["rank"].fillna(0).astype(int).astype(str).tolist() == [r or "0" for r in shown["Rank"]]
            assert got["split"].unique().tolist() in ([split], [])
            for column in [c for c in got.columns if c.endswith(("_value", "_low", "_high"))]:
                assert got.empty or got[column].dtype == float  # numbers, not "0.674 ± 0.020"
                assert got[column].tolist() == pytest.approx(want[column].astype(float).tolist(), nan_ok=True)
    private = pd.read_csv(client.predict(VQA_PRIVATE["split"], "", "overall", "any", api_name="/vqa_export")["value"])
    imported, made = private[private["provenance"] == "imported"], private[private["provenance"] != "imported"]
    assert len(imported) == len(shipped()["rows"]) and imported["overall_low"].isna().all()
    assert imported["overall_value"].tolist() == [r["overall"] for r in shipped()["rows"]]  # as published
    assert len(made) and (made["overall_low"] <= made["overall_value"]).all()
    assert (made["overall_value"] <= made["overall_high"]).all()
    keys = [vqa.column_key(c) for c in VQA_CATEGORIES]
    assert [c.removesuffix("_value") for c in private.columns if c.endswith("_value")] == ["overall", *keys]
    hostile = frame.copy()
    hostile.loc[hostile.index[0], "model"] = "=HYPERLINK(\"http://x\")"
    assert vqa.export(hostile, hostile.loc[hostile.index[0], "split"])["model"].str.startswith("'=").any()
