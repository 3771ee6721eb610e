"""The Space's Arena tab (issue 48): a signed-in reader sees one study of a public split and two anonymised reports
from two ranked models' stored predictions, sides drawn at random, chooses "A", "B", "tie" or "both bad", and only
then learns which models wrote them; below, the ranking the votes make and each metric held against them.

Sign-in is Hugging Face's OAuth (`gr.LoginButton`; a handler's `gr.OAuthProfile | None` parameter is filled from the
session). Run outside a Space, Gradio mocks it with the account of the machine's Hugging Face token (`whoami`), every
login the same fixed profile id: so the tab offers sign-in only where voting is configured (`ArenaConfig`), and a
board launched without it never asks the Hub who is there. The voter is `voter_id(profile's "sub", the maintainers'
key)`: the account's immutable id, never its name. The pair comes from `arena.pairs.next_matchup`, a vote is refused
in words by `arena.pairs.refusal` (a second vote on the study and pair, the hourly and daily limits), and one that
counts is appended by `VoteLog` (CommitScheduler to the votes dataset repo) and pushed once more on SIGTERM: Python's
default SIGTERM ends the process without the scheduler's exit push."""

import base64
import os
import random
import signal
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rexrank.arena.pairs import Matchup, next_matchup, refusal
from rexrank.arena.ranking import RESAMPLES
from rexrank.arena.votes import TIME, Vote, VoteLog, hub_votes, voter_id
from rexrank.board import arena_data
from rexrank.board.sources import DEMO
from rexrank.text import to_markdown

KEY_ENV, VOTES_ENV, FOLDER_ENV = "ARENA_VOTER_KEY", "REXRANK_ARENA_VOTES", "REXRANK_ARENA_DIR"
CHOICES = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both are bad"}
INTRO = ("**Which report is the better one?** Read the two reports of one study, each written by a model on the "
         "board, and choose the more accurate and thorough. The models stay anonymous until you have voted; which "
         "one is A is drawn at random. One vote per account per study and pair; the votes rank the models below and "
         "hold every metric against what readers chose.")
NO_VOTING = ("Voting is open on the rexrank Space, where readers sign in with Hugging Face; this board shows the "
             "ranking its votes make.")
SIGN_IN = "Sign in with Hugging Face to vote (your account is stored only as a keyed hash, never its name)."


@dataclass
class ArenaConfig:
    """Where votes go: voting needs the maintainers' `key` (a Space secret); `repo` is the votes dataset (pushed by
    a CommitScheduler with `token`), else they stay in `folder`."""

    key: bytes | None = None
    repo: str | None = None
    token: str | None = None
    folder: Path | None = None
    images: str | None = None
    every: float = 5
    resamples: int = RESAMPLES
    seed: int | None = None  # the draws' seed (tests); None: fresh each process
    demo_votes: bool = field(default=True)  # on the demo board: its synthetic votes beside any cast here

    @classmethod
    def from_env(cls) -> "ArenaConfig":
        key = os.environ.get(KEY_ENV)
        folder = os.environ.get(FOLDER_ENV) or ("/data/arena-votes" if os.path.isdir("/data") else None)
        return cls(key.encode() if key else None, os.environ.get(VOTES_ENV) or None, os.environ.get("HF_TOKEN"),
                   Path(folder) if folder else None, os.environ.get(arena_data.IMAGES_ENV))

    @property
    def voting(self) -> bool:
        return self.key is not None


class Arena:
    """What every session of the page shares: the pools, the votes (this Space's and the repo's), the log."""

    def __init__(self, source, config: ArenaConfig):
        import tempfile

        self.config, self.source = config, source
        self.pools = {p.key: p for p in arena_data.pools(source.results, source.board)}
        self.rng = random.Random(config.seed)
        self._lock = threading.Lock()
        self.votes: list[Vote] = []
        if source.results is DEMO and config.demo_votes:
            from rexrank.arena.votes import read_votes
            from rexrank.demo.arena import demo_votes

            with tempfile.TemporaryDirectory() as tmp:  # in memory only: never pushed as if cast here
                self.votes = read_votes(demo_votes(Path(tmp) / "votes.jsonl"))
        self.log = None
        if config.voting:
            folder = config.folder or Path(tempfile.mkdtemp(prefix="rexrank-arena-votes-"))
            self.log = VoteLog(folder, config.repo, config.token, config.every, scheduler=bool(config.repo))
            try:
                self.votes += hub_votes(config.repo, config.token, folder) if config.repo else self.log.votes()
            except Exception:  # the Hub down or a new repo: this disk's votes, the refusal rules hold on them
                self.votes += self.log.votes()

    def choices(self) -> list[tuple[str, str]]:
        return [(p.label, k) for k, p in self.pools.items()]

    def voter(self, profile) -> str | None:
        return voter_id(str(profile["sub"]), self.config.key) if profile and self.config.voting else None

    def draw(self, pool_key: str | None, profile) -> tuple:
        """(the matchup shown, status, heading, images' HTML, report A, report B, buttons shown)."""
        pool = self.pools.get(pool_key or "")
        if pool is None:
            return None, "No split has two ranked models with stored predictions yet.", "", "", "", "", False
        if not self.config.voting:
            return None, NO_VOTING, "", "", "", "", False
        voter = self.voter(profile)
        if voter is None:
            return None, SIGN_IN, "", "", "", "", False
        with self._lock:
            match = next_matchup(voter, self.votes, pool.studies, pool.dataset, pool.task, rng=self.rng)
        if match is None:
            return None, f"You have voted on every study of every pair of {pool.label}: thank you.", "", "", "", "", \
                False
        files, note = arena_data.study_images(pool.dataset, match.study_id, self.config.images)
        heading = f"### {to_markdown(pool.label)}: study {to_markdown(match.study_id, 80)}"
        return (match, "Choose the better report: the models are named once you have voted.", heading,
                _images(files, note), pool.reports[match.model_a][match.study_id],
                pool.reports[match.model_b][match.study_id], True)

    def cast(self, winner: str, match: Matchup | None, profile) -> str:
        """The words the reader sees: the refusal, or the vote counted and the two models named."""
        voter = self.voter(profile)
        if voter is None:
            return SIGN_IN if self.config.voting else NO_VOTING
        if match is None:
            return "No pair is shown: choose a test set, or press Next pair."
        at = datetime.now(UTC).strftime(TIME)
        with self._lock:
            why = refusal(voter, self.votes, at, (match.dataset, match.task, match.study_id),
                          (match.model_a, match.model_b))
            if why is None:
                vote = match.vote(voter, winner, at)
                self.log.add(vote)  # on disk before the reader is told it counted
                self.votes.append(vote)
        named = f"A was **{to_markdown(match.model_a, 120)}**; B was **{to_markdown(match.model_b, 120)}**."
        if why:  # the models are named only to a reader who has voted on this study and pair
            mine = any(v.voter == voter and (v.dataset, v.task, v.study_id, v.pair) ==
                       (match.dataset, match.task, match.study_id, tuple(sorted((match.model_a, match.model_b))))
                       for v in self.votes)
            return f"**Not counted**: {why}." + (f" {named}" if mine else "")
        return f"**Counted**: your vote, {CHOICES[winner]}. {named} Press Next pair for another."

    def views(self, pool_key: str | None):
        """(the ranking's table, its note, the agreement table) for a pool."""
        pool = self.pools.get(pool_key or "")
        if pool is None:
            import pandas as pd

            return pd.DataFrame(), "No votes to rank.", pd.DataFrame()
        with self._lock:
            votes = list(self.votes)
        ranking, note = arena_data.ranking_view(votes, pool.dataset, pool.task, self.config.resamples)
        try:
            tables = arena_data.repo_tables(self.source.results, self.source.board, pool.dataset, pool.task)
        except Exception:
            tables = {}
        return ranking, note, arena_data.agreement_view(votes, tables, pool.dataset, pool.task, self.config.resamples)


def _images(files: list[str], note: str) -> str:
    """The study's images inline (data: URLs: nothing of the Space's disk is served), then the note under them."""
    from html import escape

    kinds = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}
    imgs = "".join(f'<img alt="image {i + 1} of the study" src="data:{kinds[Path(f).suffix.lower()]};base64,'
                   f'{base64.b64encode(Path(f).read_bytes()).decode()}">' for i, f in enumerate(files))
    return f'<div class="arena-images">{imgs}</div><p class="arena-image-note">{escape(note)}</p>'


def push_on_sigterm(log: VoteLog):
    """Push the votes once more when the Space is stopped (SIGTERM), then end as the previous handler would."""
    previous = signal.getsignal(signal.SIGTERM)

    def handler(signum, frame):
        try:
            log.push()
        finally:
            if callable(previous):
                previous(signum, frame)
            else:
                raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    return handler


CSS = """
.arena-images { display: flex; flex-wrap: wrap; gap: 8px; }
.arena-images img { max-width: min(100%, 420px); height: auto; }
.arena-report textarea { font-family: var(--font) !important; font-size: 16px !important; line-height: 1.5 !important; }
"""


def tab(ui, source, config: ArenaConfig | None = None) -> None:
    """The Arena tab's components, on `ui` (inside the app's gr.Tabs)."""
    import gradio as gr

    from rexrank.board.page import PAGES

    config = config or ArenaConfig.from_env()
    ui.arena = Arena(source, config)
    choices = ui.arena.choices()
    with gr.Tab(PAGES["arena"], id="arena") as ui.pages["arena"]:
        gr.Markdown(INTRO)
        with gr.Row(equal_height=False):
            ui.arena_pool = gr.Dropdown(choices, value=choices[0][1] if choices else None, label="Test set and task",
                                        scale=3, min_width=220)
            if config.voting:
                gr.LoginButton(scale=1, min_width=200)
        ui.arena_status = gr.Markdown(elem_id="arena-status")
        with gr.Column(visible=False) as ui.arena_match:  # the study and its two reports, once signed in
            ui.arena_heading = gr.Markdown()
            ui.arena_images = gr.HTML()
            with gr.Row(equal_height=True):  # side by side on a desktop, A above B on a phone
                ui.arena_a = gr.Textbox(label="Report A", interactive=False, lines=4, min_width=300,
                                        elem_classes=["arena-report"], elem_id="arena-report-a")
                ui.arena_b = gr.Textbox(label="Report B", interactive=False, lines=4, min_width=300,
                                        elem_classes=["arena-report"], elem_id="arena-report-b")
            with gr.Row():
                ui.arena_votes = {w: gr.Button(label, min_width=120, elem_id=f"arena-vote-{w}") for w, label in
                                  CHOICES.items()}
            ui.arena_next = gr.Button("Next pair", size="sm", visible=False, elem_id="arena-next")
        gr.Markdown("### Ranking from the votes")
        ui.arena_note = gr.Markdown()
        ui.arena_ranking = gr.Dataframe(interactive=False, wrap=True, elem_classes=["board"], elem_id="arena-ranking")
        gr.Markdown("### Each metric against the votes\nThe share of decisive votes (A or B chosen) where the metric, "
                    "on that study, scores the chosen report better (a metric tie counts half; a coin scores 0.5), "
                    "and Kendall's τ-b between the metric's order of the models and the votes'.")
        ui.arena_agreement = gr.Dataframe(interactive=False, wrap=True, elem_classes=["board"],
                                          elem_id="arena-agreement")
        # inside the tab: a component between two tabs of gr.Tabs takes the next tab's place (two "About" tabs
        # showed, and no "Submit")
        ui.arena_shown = gr.State(None)


def wire(ui) -> None:
    """The tab's events: drawn when shown or its test set changes, a vote per button, the next pair."""
    import gradio as gr

    arena = ui.arena

    def draw(pool, profile=None):
        match, status, heading, images, a, b, voting = arena.draw(pool, profile)
        return (match, status, heading, images, a, b, gr.update(visible=voting), gr.update(visible=False))

    def voted(winner):
        def handler(match, profile=None):
            return arena.cast(winner, match, profile), gr.update(visible=match is not None)
        handler.__annotations__ = {"profile": gr.OAuthProfile | None}  # what Gradio fills from the session
        return handler

    draw.__annotations__ = {"profile": gr.OAuthProfile | None}
    shown = [ui.arena_shown, ui.arena_status, ui.arena_heading, ui.arena_images, ui.arena_a, ui.arena_b,
             ui.arena_match, ui.arena_next]
    views = dict(fn=arena.views, inputs=ui.arena_pool, outputs=[ui.arena_ranking, ui.arena_note, ui.arena_agreement],
                 api_visibility="private")
    for event in (ui.pages["arena"].select, ui.arena_pool.input):
        event(draw, ui.arena_pool, shown, api_visibility="private").then(**views)
    ui.arena_next.click(draw, ui.arena_pool, shown, api_visibility="private")
    for winner, button in ui.arena_votes.items():
        button.click(voted(winner), ui.arena_shown, [ui.arena_status, ui.arena_next],
                     api_visibility="private").then(**views)
    if arena.log is not None and arena.log.scheduler is not None \
            and threading.current_thread() is threading.main_thread():
        push_on_sigterm(arena.log)
