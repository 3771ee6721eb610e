"""The vote record, its keyed voter, reading a votes file, and the Space's way to the Hub: a CommitScheduler pushing
the votes folder to a dataset repo on the loopback fake Hub (create_repo, preupload, commit), nothing lost when the
process ends before a push."""

import hashlib
import json

import pytest

from rexrank.arena.votes import FIELDS, IN_REPO, Vote, VoteLog, hub_votes, read_votes, voter_id
from rexrank.errors import InputError

KEY = b"a maintainers' key of 32 bytes.."


def vote(n: int, voter: str = "reader", winner: str = "a") -> Vote:
    return Vote(voter_id(voter, KEY), f"s{n}", "iu_xray", "findings", "M1", "M2", winner, f"2026-01-01T00:00:{n:02d}Z")


def test_the_voter_is_a_keyed_hash_never_the_account():
    one = voter_id("alice", KEY)
    assert one == voter_id("alice", KEY) and len(one) == 2 * hashlib.sha256().digest_size  # an HMAC-SHA256, in hex
    assert one != voter_id("alice", b"another key of 32 bytes........")  # without the key a name cannot be tested
    assert one != voter_id("bob", KEY)
    assert "alice" not in vote(1, "alice").to_json()
    with pytest.raises(InputError, match="16 bytes"):
        voter_id("alice", b"short")


def test_a_record_has_the_issues_fields_and_reads_back(tmp_path):
    written = [vote(n, winner=w) for n, w in enumerate(("a", "b", "tie", "both_bad"))]
    path = tmp_path / "votes.jsonl"
    path.write_text("".join(v.to_json() + "\n" for v in written) + "\n")  # a blank line is skipped
    assert list(json.loads(path.read_text().splitlines()[0])) == list(FIELDS)
    assert read_votes(path) == written
    assert read_votes(tmp_path) == written  # a folder: its *.jsonl


@pytest.mark.parametrize("change, message", [
    ({"winner": "A"}, "winner 'A'"),
    ({"voter": "alice"}, "keyed hash"),
    ({"time": "2026-01-01 00:00:00"}, "not UTC"),
    ({"model_b": "M1"}, "both 'M1'"),
    ({"study_id": ""}, "study_id must be non-empty"),
    ({"study_id": 7}, "study_id must be non-empty text"),
])
def test_a_bad_record_is_named_by_file_and_line(tmp_path, change, message):
    good = json.loads(vote(1).to_json())
    path = tmp_path / "votes.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps({**good, **change}) + "\n")
    with pytest.raises(InputError, match=rf"votes.jsonl:2: .*{message}"):
        read_votes(path)


def test_not_json_and_missing_fields_are_named(tmp_path):
    path = tmp_path / "v.jsonl"
    path.write_text("{not json\n")
    with pytest.raises(InputError, match=r"v.jsonl:1: not JSON"):
        read_votes(path)
    path.write_text('{"voter": "x"}\n')
    with pytest.raises(InputError, match=r"v.jsonl:1: missing study_id, dataset"):
        read_votes(path)


def test_the_scheduler_pushes_votes_to_the_dataset_repo_and_a_restart_loses_none(fake_hub, tmp_path):
    folder = tmp_path / "votes"
    # every 60 minutes: the scheduler's thread pushes once at start, then the test's push() calls, queued behind it
    first = VoteLog(folder, "rexrank/arena-votes", token="hf_space", every=60)
    for n in range(3):
        first.add(vote(n))
    first.push()
    on_hub = fake_hub.files("rexrank/arena-votes", "dataset")
    assert sorted(on_hub) == [".gitattributes", f"{IN_REPO}/{first.path.name}"]
    assert fake_hub.settings("rexrank/arena-votes", "dataset")["private"] is True
    first.add(vote(3))  # on disk, then the process dies before its next push (and its exit push)
    first.scheduler.stop()
    second = VoteLog(folder, "rexrank/arena-votes", token="hf_space", every=60)  # restarted on the same disk
    second.add(vote(4, "other"))
    second.push()
    second.scheduler.stop()
    files = fake_hub.files("rexrank/arena-votes", "dataset")
    pushed = [v for name in sorted(files) if name.endswith(".jsonl")
              for v in map(json.loads, files[name].decode().splitlines())]
    assert sorted(v["study_id"] for v in pushed) == ["s0", "s1", "s2", "s3", "s4"]
    # what a restarted Space reads back to know who voted what: the Hub's copies, the disk's where longer
    assert {v.study_id for v in hub_votes("rexrank/arena-votes", token="hf_space", local=folder)} == \
        {"s0", "s1", "s2", "s3", "s4"}


def test_a_vote_on_disk_is_whole_before_add_returns(tmp_path):
    log = VoteLog(tmp_path / "votes")  # no repo: kept local
    assert log.scheduler is None and log.push() is None
    log.add(vote(1))
    assert log.votes() == [vote(1)]
    with pytest.raises(InputError):
        log.add(vote(2, winner="left"))
    assert log.votes() == [vote(1)]
