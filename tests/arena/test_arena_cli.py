"""`rexrank arena-rank` and `rexrank arena-agreement` on the demo's synthetic votes (and real `rexrank score` tables of
the demo systems), and their errors: one line, exit 2."""

import json

import pytest

from rexrank import demo
from rexrank.arena.limits import Limits, counted
from rexrank.arena.votes import read_votes, voter_id
from rexrank.cli import main
from rexrank.demo.arena import KEY, STRENGTH, demo_votes

NAMES = {k: c["name"] for k, c in demo.systems().items()}


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    """The demo's votes, and the three demo systems scored on the demo split with BLEU-2 and ROUGE-L."""
    root = tmp_path_factory.mktemp("arena")
    votes = demo_votes(root / "votes.jsonl")
    for key, name in NAMES.items():
        assert main(["score", "--predictions", str(demo.predictions(key, "findings")), "--dataset", str(demo.DATASET),
                     "--dataset-name", demo.NAME, "--task", "findings", "--metrics", "bleu2,rouge_l",
                     "--model-name", name, "--out", str(root / "results"), "--quiet"]) == 0
    return votes, root / "results"


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Fewer honest readers (the hostile voters as many): quick to draw."""
    return demo_votes(tmp_path_factory.mktemp("small") / "votes.jsonl", readers=12, each=12)


def test_the_demo_votes_are_deterministic_and_the_rules_hold_their_hostile_voters(small, tmp_path):
    votes = small
    assert demo_votes(tmp_path / "again.jsonl", readers=12, each=12).read_bytes() == votes.read_bytes()
    out = counted(read_votes(votes))
    flooder = voter_id("demo-flooder", KEY)
    assert sum(w for v, w in zip(out.votes, out.weights) if v.voter == flooder) <= Limits().weight
    assert not any(v.voter == voter_id("demo-newcomer-0", KEY) for v in out.votes)


@pytest.mark.slow
def test_arena_rank_on_the_demo_votes(arena, capsys):
    votes, _ = arena
    assert main(["arena-rank", str(votes), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    ranked = [NAMES[k] for k in sorted(STRENGTH, key=STRENGTH.get, reverse=True)]
    rows = [line.split()[1] for line in out.splitlines() if line[:1].isdigit() and line.split()[1] in ranked]
    assert rows == ranked  # the hidden strengths' order, the flood notwithstanding
    assert "position bias:" in out and "chose A" in out
    assert f"an account with fewer than {Limits().newcomer} votes" in out
    assert voter_id("demo-flooder", KEY)[:12] in out.split("anomalous voters")[1]  # 0 of its votes agreed


@pytest.mark.slow
def test_arena_agreement_on_the_demo_votes(arena, capsys):
    votes, results = arena
    assert main(["arena-agreement", str(votes), "--results", str(results), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    table = out.split("prefers the chosen report")[1].splitlines()[2:4]
    assert [line.split()[0] for line in table] == ["bleu2", "rouge_l"]
    assert all(0.5 < float(line.split()[1]) < 1 for line in table)  # better than a coin, short of the readers


def test_arena_errors_are_one_line_exit_2(small, tmp_path, capsys):
    votes = small
    bad = tmp_path / "bad.jsonl"
    first = votes.read_text().splitlines()[0]
    bad.write_text(first + "\n" + first.replace('"winner": "', '"winner": "x') + "\n")
    other = tmp_path / "two.jsonl"
    other.write_text(first + "\n" + json.dumps({**json.loads(first), "dataset": "iu_xray"}) + "\n")
    lines = votes.read_text().splitlines()
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join(lines + [line.replace(demo.NAME, "iu_xray") for line in lines]) + "\n")
    cases = [
        (["arena-rank", str(tmp_path / "none.jsonl")], "none.jsonl: no such votes file or folder"),
        (["arena-rank", str(bad)], "bad.jsonl:2: winner"),
        (["arena-rank", str(votes), "--dataset", "mimic"], "no vote on mimic"),
        (["arena-rank", str(other)], "no vote left to count"),  # one account with two votes: a newcomer
        (["arena-agreement", str(votes), "--results", str(tmp_path / "nowhere")], "no such results folder"),
        (["arena-agreement", str(votes), "--results", str(tmp_path)], "no metric scores both reports"),
        (["arena-agreement", str(mixed), "--results", str(tmp_path)], "choose one with --dataset and --task"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rexrank: error: ") and message in err, (argv, err)
