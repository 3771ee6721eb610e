"""Synthetic Arena votes for the demo: readers who vote between the demo systems' reports on the demo split, as the
Space would record them (keyed voters, pairs from `rexrank.arena.pairs`, sides at random), so the board's Arena and
`rexrank arena-rank` / `arena-agreement` have something honest to show without a single real vote.

The readers do not read: each system has a hidden strength (Demo-Careful above Demo-Template above Demo-Shuffled),
each (system, study) a hidden noise, and a reader prefers a report with the Bradley–Terry probability of the two
utilities, with a small lean towards side A, a few ties and "both bad" votes. Beside them, the voters the rules are
for: one contrarian who picks the worse report (listed as anomalous), one account that floods the worse system with
votes (counted at the per-account weight), and a crowd of new accounts each voting once for it (not counted)."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rexrank import demo
from rexrank.arena.pairs import next_matchup
from rexrank.arena.votes import TIME, Vote, voter_id
from rexrank.files import write_text

KEY = b"rexrank-demo-voter-key: synthetic, not a secret"
STRENGTH = {"demo-careful": 1.0, "demo-template": 0.3, "demo-shuffled": -0.6}  # log-odds
LEAN_A = 0.15  # log-odds towards side A: the position bias the demo's ratings should find
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def demo_votes(path: str | Path, task: str = "findings", readers: int = 30, each: int = 30, seed: int = 0) -> Path:
    """Writes the votes as JSONL to `path` (about readers x each honest votes, plus the hostile voters')."""
    rng = random.Random(seed)
    names = {key: card["name"] for key, card in demo.systems().items()}
    strength = {names[k]: s for k, s in STRENGTH.items()}
    ids = [json.loads(line)["study_id"] for line in demo.DATASET.read_text().splitlines() if line.strip()]
    noise = {(m, s): rng.gauss(0, 0.8) for m in strength for s in ids}
    studies = {m: ids for m in strength}
    votes: list[Vote] = []
    clock = START

    def cast(who: str, choose, n: int) -> None:
        nonlocal clock
        voter = voter_id(who, KEY)
        for _ in range(n):
            match = next_matchup(voter, votes, studies, demo.NAME, task, rng=rng)
            if match is None:
                return
            clock += timedelta(seconds=rng.randint(20, 400))
            utility = {m: strength[m] + noise[m, match.study_id] for m in (match.model_a, match.model_b)}
            votes.append(match.vote(voter, choose(utility[match.model_a], utility[match.model_b]),
                                    clock.strftime(TIME)))

    def reader(a: float, b: float) -> str:
        u = rng.random()
        if u < 0.08:
            return "tie"
        if u < 0.12:
            return "both_bad" if max(a, b) < 0 else "tie"
        return "a" if rng.random() < 1 / (1 + math.exp(-(a - b + LEAN_A))) else "b"

    for r in range(readers):
        cast(f"demo-reader-{r}", reader, each)
    cast("demo-contrarian", lambda a, b: "b" if a > b else "a", each)
    worst = min(strength, key=strength.get)
    flood = voter_id("demo-flooder", KEY)
    others = sorted(m for m in strength if m != worst)
    for k in range(1000):  # one account, one side, as fast as it can: the Space would refuse most of these
        clock += timedelta(seconds=3)
        a, b = (worst, others[k % 2]) if k % 2 else (others[k % 2], worst)
        votes.append(Vote(flood, ids[k % len(ids)], demo.NAME, task, a, b, "a" if a == worst else "b",
                          clock.strftime(TIME)))
    for n in range(40):  # new accounts, one vote each for the worst system
        clock += timedelta(seconds=5)
        votes.append(Vote(voter_id(f"demo-newcomer-{n}", KEY), ids[n % len(ids)], demo.NAME, task, worst,
                          others[n % 2], "a", clock.strftime(TIME)))
    write_text(path, "".join(v.to_json() + "\n" for v in votes))
    return Path(path)
