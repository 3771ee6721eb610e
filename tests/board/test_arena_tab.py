"""The board's Arena tab (issue 48): which reports it pairs (a results repo's ranked models' stored predictions, the
demo's), which images a public page shows, a signed-in reader's vote (refused in words the second time, the models
named only after it), the push on SIGTERM, and the tab in Chromium at 1400 and 390 px with Gradio's local OAuth mock
signed in through the loopback fake Hub's whoami."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from fixtures.board import results_repo

from rexrank import demo
from rexrank.arena.pairs import PER_HOUR
from rexrank.arena.votes import IN_REPO, Vote, read_votes, voter_id
from rexrank.board import arena_data
from rexrank.board.aggregate import aggregate
from rexrank.board.arena import Arena, ArenaConfig
from rexrank.board.sources import DEMO, BoardSource
from rexrank.catalog import TEST_SETS
from rexrank.demo.arena import STRENGTH

KEY = b"the maintainers' arena key, 32 b"
NAMES = {k: c["name"] for k, c in demo.systems().items()}
PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
MOCK_SUB = "11111111111111111111111"  # the profile id Gradio's local OAuth mock signs everyone in as


def test_a_public_page_shows_images_only_of_a_split_whose_licence_lets_it(tmp_path):
    (tmp_path / "iu-xray" / "CXR1_1").mkdir(parents=True)
    (tmp_path / "iu-xray" / "CXR1_1" / "frontal.png").write_bytes(PNG)
    (tmp_path / "mimic-cxr" / "s1").mkdir(parents=True)
    (tmp_path / "mimic-cxr" / "s1" / "frontal.png").write_bytes(PNG)  # a copy on disk is still not shown
    shown = {name for name in TEST_SETS if arena_data.images_allowed(name)}
    assert shown == {n for n, t in TEST_SETS.items() if not t.credentialed and not t.private}
    assert "iu-xray" in shown and not shown & {"mimic-cxr", "chexpert-plus", "rexgradient"}  # CC BY-NC-ND; credentialed
    files, note = arena_data.study_images("iu-xray", "CXR1_1", tmp_path)
    assert [Path(f).name for f in files] == ["frontal.png"] and "CC-BY-NC-ND-4.0" in note
    for name in ("mimic-cxr", "chexpert-plus"):
        files, note = arena_data.study_images(name, "s1", tmp_path)
        assert files == [] and "credentialed" in note and "shows none of its images" in note and "`s1`" in note
    assert arena_data.study_images("iu-xray", "CXR9", tmp_path)[0] == []  # no copy of that study: said so
    assert "no copy" in arena_data.study_images("iu-xray", "CXR9", tmp_path)[1]
    assert arena_data.study_images("iu-xray", "../mimic-cxr/s1", tmp_path)[0] == []  # never outside its folder
    assert "synthetic" in arena_data.study_images(demo.NAME, "demo-0001", tmp_path)[1]


def test_a_results_repo_pairs_its_ranked_models_stored_predictions(tmp_path):
    repo = results_repo(tmp_path)
    for sub, text in (("lab-a", "No pleural effusion."), ("lab-b", "Small left effusion."), ("lab-c", "Clear.")):
        folder = repo / "submissions" / sub / "predictions"
        folder.mkdir()
        (folder / "mimic-cxr.findings.jsonl").write_text(
            "".join(json.dumps({"study_id": f"s{i}", "prediction": f"{text} {i}"}) + "\n" for i in range(3)))
    board = aggregate(repo)
    ranked = board[(board["dataset"] == "mimic-cxr") & board["rank"].notna() & board["submission"].notna()]
    pools = arena_data.pools(str(repo), board)
    assert [p.key for p in pools] == ["mimic-cxr.findings"]
    assert sorted(pools[0].reports) == sorted(ranked["model"]) == ["A", "B"]  # C is not ranked: not paired
    assert pools[0].reports["B"]["s2"] == "Small left effusion. 2"
    assert arena_data.pools(None, board) == []  # the official tables store no predictions


def _plain(markdown: str) -> str:
    """Markdown as read: its escapes dropped (a model's name is escaped where the page writes it)."""
    return markdown.replace("\\", "")


def _profile(sub: str) -> dict:
    return {"sub": sub, "preferred_username": "someone", "name": "Someone", "profile": "", "picture": ""}


@pytest.fixture(scope="module")
def demo_source():
    source = BoardSource(DEMO)
    source.load()
    return source


READER = "reader-sub-quartz"  # an account id no timestamp or hex digest can hold ("42" was in 08:42:24)


def test_a_vote_is_counted_once_and_names_the_models_only_after_it(demo_source, tmp_path):
    arena = Arena(demo_source, ArenaConfig(key=KEY, folder=tmp_path / "votes", resamples=50, seed=1))
    pool = next(iter(arena.pools))
    match, status, heading, images, a, b, voting = arena.draw(pool, _profile(READER))
    assert voting and a and b and "synthetic" in images
    assert not any(name in _plain(text) for name in NAMES.values() for text in (status, heading, images, a, b))
    said = _plain(arena.cast("b", match, _profile(READER)))
    assert said.startswith("**Counted**") and match.model_a in said and match.model_b in said
    again = _plain(arena.cast("a", match, _profile(READER)))
    assert again.startswith("**Not counted**: you have already voted on this study and pair")
    written = read_votes(tmp_path / "votes")
    assert [(v.voter, v.study_id, v.model_a, v.model_b, v.winner) for v in written] == \
        [(voter_id(READER, KEY), match.study_id, match.model_a, match.model_b, "b")]
    assert READER not in (tmp_path / "votes").joinpath(arena.log.path.name).read_text()  # its keyed hash only
    # another reader, past the hourly limit: refused, and not told whose reports these are
    other = voter_id("7", KEY)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    arena.votes += [Vote(other, f"x{i}", match.dataset, match.task, "P", "Q", "a", at) for i in range(PER_HOUR)]
    refused = _plain(arena.cast("a", match, _profile("7")))
    assert f"at most {PER_HOUR} votes an hour" in refused and match.model_a not in refused
    assert arena.cast("a", match, None).startswith("Sign in") and arena.draw(pool, None)[-1] is False
    ranking, note, agreement = arena.views(pool)
    shown = [m for m in ranking["Model"] if m in NAMES.values()]  # (the other reader's 60 votes on P and Q too)
    assert shown == [NAMES[k] for k in sorted(STRENGTH, key=STRENGTH.get, reverse=True)]
    assert agreement["Metric"].tolist() == ["BLEU", "ROUGE-L"]


def test_without_the_key_the_tab_offers_no_voting(demo_source):
    arena = Arena(demo_source, ArenaConfig(resamples=50))
    pool = next(iter(arena.pools))
    assert arena.log is None and arena.draw(pool, _profile("42"))[1].startswith("Voting is open on the rexrank Space")
    assert not arena.views(pool)[0].empty  # the demo's synthetic votes are ranked all the same


@pytest.mark.slow
@pytest.mark.subprocess
def test_sigterm_pushes_the_votes_not_yet_pushed(fake_hub, tmp_path):
    """Python's default SIGTERM ends a process without the CommitScheduler's exit push: the Space's handler
    pushes first. The scheduler pushes every 60 minutes here, so only the handler can carry the vote."""
    fake_hub.allow("hf_space", "rexrank/arena-votes")
    script = tmp_path / "space.py"
    script.write_text(
        "import sys, time\n"
        "from rexrank.arena.votes import Vote, VoteLog\n"
        "from rexrank.board.arena import push_on_sigterm\n"
        "log = VoteLog(sys.argv[1], 'rexrank/arena-votes', token='hf_space', every=60)\n"
        "log.push()  # the scheduler's first push, done: what follows is only on disk\n"
        "push_on_sigterm(log)\n"
        f"log.add(Vote({'a' * 64!r}, 's9', 'iu-xray', 'findings', 'M1', 'M2', 'tie', '2026-01-01T00:00:00Z'))\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n")
    env = {**os.environ, "HF_ENDPOINT": fake_hub.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "hf"),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    process = subprocess.Popen([sys.executable, str(script), str(tmp_path / "votes")], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "ready", process.stderr.read()
        assert not any(n.endswith(".jsonl") and b"s9" in d
                       for n, d in fake_hub.files("rexrank/arena-votes", "dataset").items())
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 128 + signal.SIGTERM
    finally:
        process.kill()
    files = fake_hub.files("rexrank/arena-votes", "dataset")
    assert [json.loads(d)["study_id"] for n, d in files.items() if n.startswith(f"{IN_REPO}/")] == ["s9"]


# --- the tab in Chromium, signed in through Gradio's local OAuth mock ------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _text(page, selector: str, wanted: str, timeout_s: float = 60) -> str:
    """The element's text once it holds `wanted` and Gradio's "processing | 0.0s" overlay has left it (an event still
    queued shows the overlay over the text it will replace)."""
    deadline = time.monotonic() + timeout_s
    while (wanted not in (text := page.locator(selector).inner_text()) or text.startswith("processing")) \
            and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    return text


def test_a_signed_in_reader_votes_in_a_browser_at_both_widths(fake_hub, chromium, tmp_path, monkeypatch):
    from rexrank.board.app import build, launch_options

    fake_hub.allow("hf_space", "rexrank/arena-votes")
    monkeypatch.setenv("HF_TOKEN", "hf_arena-reader")  # the account Gradio's mock signs in as (fake Hub's whoami)
    monkeypatch.setenv("GRADIO_ANALYTICS_ENABLED", "False")
    folder = tmp_path / "votes"
    # the app's scheduler pushes every 3 s: the votes reach the Hub as they would on a Space, every few minutes
    config = ArenaConfig(key=KEY, repo="rexrank/arena-votes", token="hf_space", folder=folder, every=0.05,
                         resamples=100, seed=0)
    others = {t for t in threading.enumerate() if "_run_scheduler" in t.name}  # other tests' (an hour's sleep)
    app = build(DEMO, refresh_s=3600, arena_config=config)
    app.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True,
               **launch_options())
    ranked = [NAMES[k] for k in sorted(STRENGTH, key=STRENGTH.get, reverse=True)]
    cast = []
    try:
        with chromium as browser:
            for width in (1400, 390):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(app.local_url + "?tab=arena")
                ranking = page.locator("#arena-ranking")
                ranking.get_by_text(ranked[-1]).wait_for()
                rows = [r for r in ranking.locator("[role=row]").all_inner_texts() if any(n in r for n in ranked)]
                assert [next(n for n in ranked if n in r) for r in rows] == ranked  # the demo's hidden order
                assert "Sign in with Hugging Face to vote" in _text(page, "#arena-status", "Sign in")
                assert not page.locator("#arena-vote-a").is_visible()
                page.get_by_role("button", name="Sign in with Hugging Face").click()
                page.get_by_role("button", name="Logout (arena-reader)").wait_for()
                assert "models are named once you have voted" in _text(page, "#arena-status", "named once")
                page.locator("#arena-vote-a").wait_for()
                before = page.inner_text("body").split("Ranking from the votes")[0]
                assert not any(name in before for name in NAMES.values())  # anonymised until the vote
                a, b = (page.locator(f"#arena-report-{s} textarea").input_value() for s in "ab")
                assert a and b and a != b
                box_a, box_b = (page.locator(f"#arena-report-{s}").bounding_box() for s in "ab")
                if width == 1400:
                    assert abs(box_a["y"] - box_b["y"]) < 2 and box_b["x"] > box_a["x"] + box_a["width"] - 1
                else:
                    assert box_b["y"] >= box_a["y"] + box_a["height"] - 1  # A above B, each the page's width
                for button in page.locator("[id^=arena-vote-]").all():
                    box = button.bounding_box()
                    assert box["x"] >= 0 and box["x"] + box["width"] <= width
                page.screenshot(path=f"/tmp/rexrank-arena-{width}-before.png", full_page=True)
                page.locator("#arena-vote-a").click()
                said = _text(page, "#arena-status", "Counted")
                assert said.startswith("Counted: your vote, A is better.")
                named = [n for n in NAMES.values() if n in said]
                assert len(named) == 2
                cast.append(named)
                page.screenshot(path=f"/tmp/rexrank-arena-{width}-voted.png", full_page=True)
                page.locator("#arena-vote-b").click()
                again = _text(page, "#arena-status", "Not counted")
                assert again.startswith("Not counted: you have already voted on this study and pair.")
                page.screenshot(path=f"/tmp/rexrank-arena-{width}-again.png", full_page=True)
        votes = read_votes(folder)
        assert len(votes) == 2 and {v.voter for v in votes} == {voter_id(MOCK_SUB, KEY)}  # never the name
        assert "arena-reader" not in "".join(p.read_text() for p in folder.glob("*.jsonl"))
        assert [sorted((v.model_a, v.model_b)) for v in votes] == [sorted(n) for n in cast]
        assert all(v.winner == "a" and v.dataset == demo.NAME for v in votes)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pushed = [v for n, d in fake_hub.files("rexrank/arena-votes", "dataset").items()
                      if n.startswith(f"{IN_REPO}/") for v in d.decode().splitlines()]
            if len(pushed) == 2:
                break
            time.sleep(0.5)
        assert sorted(pushed) == sorted(v.to_json() for v in votes)  # the app's scheduler carried both
    finally:
        app.close()
    # closed, the app's scheduler stops: no thread left pushing into the next test's Hub (one did, and a later test's
    # download in the same process read from a closed socket)
    def pushing():
        return {t for t in threading.enumerate() if "_run_scheduler" in t.name} - others

    deadline = time.monotonic() + 10
    while pushing() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pushing()
