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
