"""A researcher's own board in a real browser (Chromium at 1400 and 390 px): `rexrank leaderboard --results` of IU-Xray
results opens on IU-Xray; a phone's first screen shows the ranking metric's numbers; a link's model that is not on
the board is said so and stays in the address; the Model page draws each metric's per-study distribution and a
click (a tap) on a bar lists its studies, and says why a private or imported row has none. On the demo board,
Compare writes a p-value at its floor as the bound it is."""

import json
import random
import socket

import pytest
from conftest import ROOT

from rexrank import studies
from rexrank.board import sources
from rexrank.cli import main
from rexrank.results import result_paths

IDS = (ROOT / "src" / "rexrank" / "resources" / "splits" / "iu-xray.test.txt").read_text().split()
WORDS = ["Heart size is normal.", "The lungs are clear.", "No pleural effusion.", "Mild cardiomegaly.",
         "Small left effusion.", "No pneumothorax.", "Degenerative changes of the spine."]  # synthetic


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """Two models' IU-Xray findings results (the official split's ids, synthetic reports) in one --out folder."""
    root = tmp_path_factory.mktemp("own")
    rng = random.Random(36)
    split = {i: {"section_findings": " ".join(rng.sample(WORDS, 4)), "section_impression": "Normal."} for i in IDS}
    (root / "iu.json").write_text(json.dumps(split))
    for model, keep in (("model-a", 0.8), ("model-b", 0.4)):
        rows = [{"study_id": i, "prediction": " ".join(w for w in rng.sample(WORDS, 4) if rng.random() < keep)}
                for i in split]
        (root / f"{model}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert main(["score", "--predictions", str(root / f"{model}.jsonl"), "--dataset", str(root / "iu.json"),
                     "--task", "findings", "--metrics", "bleu2", "--resamples", "20", "--quiet", "--out",
                     str(root / "out")]) == 0
    return root / "out"


def _launch(results):
    from rexrank.board.app import build, launch_options

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = build(results, refresh_s=3600)
    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=port, quiet=True, **launch_options())
    return demo


@pytest.fixture
def browser(chromium):
    """The module's one Chromium (tests/fixtures/browser.py): the marks browser and slow come with it."""
    return chromium


def test_an_own_board_in_a_browser_at_both_widths(own, browser):
    demo = _launch(str(own))
    scored = studies.load(result_paths(own, "iu-xray", "findings", "model-a")[0])
    try:
        for width in (1400, 390):
            touch = width == 390
            page = browser.new_page(viewport={"width": width, "height": 900}, has_touch=touch)
            page.goto(demo.local_url)
            page.locator(".board [role=gridcell]:visible").first.wait_for()
            # its own rows' test set, not ReXGradient
            page.wait_for_function("document.querySelector('input[aria-label=\"Dataset\"]')?.value === 'IU-Xray'")
            header = page.locator(".board th:visible").filter(has_text="1/RadCliQ-v1").first.bounding_box()
            frame = page.locator(".board:visible").first.bounding_box()
            cell = page.locator(".board [role=gridcell][aria-colindex='4']:visible").first.bounding_box()
            assert header["x"] + header["width"] <= frame["x"] + frame["width"] + 1  # the ranking metric in sight
            assert cell["x"] + cell["width"] <= width and cell["y"] + cell["height"] <= 900  # its first number

            page.goto(demo.local_url + "?tab=model&model=NoSuchModel")
            page.get_by_text("No model named NoSuchModel on this board").wait_for()
            page.wait_for_timeout(1_000)  # the tab's own events, then nothing rewrote the address
            assert "model=NoSuchModel" in page.url and "model=null" not in page.url

            page.goto(demo.local_url + "?tab=model&model=model-a")
            bars = page.locator("#per-study [id^='bin-bleu2-']")
            bars.first.wait_for()
            assert bars.count() == studies.BINS
            counts = [len(studies.in_bin(scored, "bleu2", i)) for i in range(studies.BINS)]
            fullest = counts.index(max(counts))
            bar = page.locator(f"#per-study [id='bin-bleu2-{fullest}'] path").first
            bar.scroll_into_view_if_needed()
            bar.tap() if touch else bar.click()
            listing = page.get_by_text(f"The {counts[fullest]:,} studies of the bar clicked, worst first")
            listing.wait_for()
            first = studies.in_bin(scored, "bleu2", fullest)["study_id"].iloc[0]
            page.get_by_role("gridcell", name=first, exact=True).first.wait_for()
            page.screenshot(path=str(own.parent / f"model-{width}.png"), full_page=True)

            page.goto(demo.local_url + "?tab=model&model=MedVersa")  # an official row: imported, no per-study table
            page.get_by_text("IU-Xray · Findings: ReXrank's figure as published, with no per-study scores").first \
                .wait_for()
            assert page.locator("#per-study [id^='bin-']").count() == 0
            page.close()
    finally:
        demo.close()


def test_the_demo_board_says_why_a_private_set_has_no_per_study_figure_and_bounds_a_floor_p(browser):
    demo = _launch(sources.DEMO)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(demo.local_url + "?tab=model&model=Demo-Careful")
        page.get_by_text("ReXGradient · Findings: a private test set, whose per-study scores are never published") \
            .first.wait_for()
        page.locator("#per-study [id^='bin-radcliq_v1-']").first.wait_for()  # the other sets drawn
        page.goto(demo.local_url + "?tab=compare&dataset=mimic-cxr&task=findings&a=Demo-Careful&b=Demo-Shuffled")
        page.get_by_text("A = Demo-Careful, B = Demo-Shuffled").wait_for()
        page.get_by_role("gridcell", name="<0.0001").first.wait_for()  # not a rounded 0.0001
        assert page.get_by_role("gridcell", name="0.0001", exact=True).count() == 0
    finally:
        demo.close()


# What the screenshots showed (issue 46), measured: a cell whose text is wider than its box, a header drawn in two
# fonts, and a column past the table's edge.
CUT = """(root) => [...document.querySelectorAll(root + ' :is(th, [role=gridcell])')].filter(c => c.offsetParent)
  .filter(c => [c, ...c.querySelectorAll('span')].some(e => e.scrollWidth > e.clientWidth + 1))
  .map(c => c.textContent.trim())"""


def _fonts(page, selector: str) -> set[str]:
    """The fonts Chromium drew an element's text with (a glyph missing from the first comes from a fallback)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return {f["familyName"] for f in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]}


def test_ones_own_rows_are_marked_filtered_and_compared_and_nothing_is_cut_at_either_width(own, browser):
    from rexrank.board import views

    demo = _launch(str(own))
    try:
        for width in (1400, 390):
            page = browser.new_page(viewport={"width": width, "height": 900}, has_touch=width == 390)
            page.goto(demo.local_url)
            first = page.locator(".ranked [role=gridcell][aria-colindex='1']:visible").first
            first.wait_for()
            assert first.inner_text().strip() == views.OWN_MARK  # one's own row first, marked
            if width == 390:  # the ranking metric's column whole in the table's frame, no cell's text cut
                frame = page.locator(".ranked:visible").first.bounding_box()
                cell = page.locator(".ranked [role=gridcell][aria-colindex='4']:visible").first.bounding_box()
                assert cell["x"] + cell["width"] <= frame["x"] + frame["width"] + 1
                assert page.evaluate(CUT, ".ranked") == []
            # the header's glyphs from one font (Gradio's SemiBold face held only A and B)
            assert len(_fonts(page, ".ranked th:nth-child(4) .header-content span")) == 1

            page.goto(demo.local_url + "?source=yours")  # the menu's word, from a link
            page.wait_for_function("document.querySelectorAll('.ranked [role=gridcell][aria-colindex=\"3\"]')"
                                   ".length === 2")
            assert page.locator("input[aria-label='Source']").input_value() == views.SOURCE_FILTER["yours"]

            page.goto(demo.local_url + "?tab=compare&dataset=iu-xray&task=findings&a=model-a&b=model-b")
            page.get_by_text(f"A = model-a {views.OWN_MARK} (yours, unverified), B = model-b {views.OWN_MARK}") \
                .wait_for()
            p_value = page.locator(".pair [role=gridcell][aria-colindex='4']:visible").first
            p_value.wait_for()
            frame = page.locator(".pair:visible").first.bounding_box()
            box = p_value.bounding_box()
            assert box["x"] + box["width"] <= frame["x"] + frame["width"] + 1  # both p-values in view
            assert page.evaluate(CUT, ".pair") == []
            header = page.locator(".pair th:visible").filter(has_text="A − B").first
            assert header.locator(".header-content span").bounding_box()["height"] < 30  # on one line
            page.close()
    finally:
        demo.close()


def test_the_model_pages_figures_are_legible_at_390_px(browser):
    demo = _launch(sources.DEMO)
    try:
        page = browser.new_page(viewport={"width": 390, "height": 900}, has_touch=True)
        page.goto(demo.local_url + "?tab=model&model=Demo-Careful")
        bars = page.locator("#per-study [id^='bin-']").first
        bars.wait_for()
        figure = page.locator(".figure:visible").first
        label = figure.locator("label, [data-testid='block-label']").first.bounding_box()
        image = figure.locator("img").first.bounding_box()
        assert label["y"] + label["height"] <= image["y"] + 1  # the label above the figure, not over a title
        svg = page.locator("#per-study svg").bounding_box()
        panels = int(page.locator(".per-study-figure").evaluate(
            "e => getComputedStyle(e).getPropertyValue('--panels')"))
        assert svg["width"] / panels >= 300  # a panel as drawn, its axes legible (it scrolls sideways)
        numbers = page.locator(".board:visible").filter(has_text="Dataset").first
        assert page.evaluate(CUT, ".board") == [] and numbers.is_visible()
    finally:
        demo.close()
