"""The ledger's word counts only where the maintainers' jobs signed it (docs/security.md, rules 20-22). `ledger/` is
on main, which the Hub's merge button writes: a pull request the review refuses, merged anyway, once added any record
it liked, and the result, imported row or review it vouched for ranked. End to end on the loopback Hub: the attacker's
pull request merged by the button, then the aggregate job, the jobs' own writes, `approve`, key rotation and the
migration of an unsigned ledger (`python -m rexrank.backend sign-ledger`)."""

import base64
import json
import re
import stat

import datasets
import pandas as pd
import pytest
from fixtures.board import result
from huggingface_hub import CommitOperationAdd, HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.errors import InputError
from rexrank.official import IMPORTED, SHIPPED
from rexrank.results import MetricResult
from rexrank.rules import ledger, signing
from rexrank.signature import Signature

REPO = "rexrank/results"
HONEST = "submissions/lab-f/results/mimic-cxr.findings.json"  # generated, its GREEN contradicted twice: withheld
FORGED_RESULT = "submissions/lab-x/results/mimic-cxr.findings.json"
FORGED_IMPORT = f"{IMPORTED}/mimic-cxr.findings.forged.json"
# what the attacker's ledger entries vouch for: a generated result, an imported row, a review of lab-f's verdicts
FORGED_ENTRIES = (f"{ledger.SUBMISSIONS}/lab-x.json", f"{ledger.IMPORTS}/mimic-cxr.findings.forged.json",
                  f"{ledger.REVIEWS}/lab-f.mimic-cxr.findings.json")


def maintainers() -> HfApi:
    return HfApi(token="hf_maintainer")


def honest_result() -> bytes:
    made = result("F", 5.0, provenance="generated")
    made.metrics["green"] = MetricResult(0.83, 0.83, 0.5, 1.0, 3, "mean", signature=Signature("green", "4"))
    made.extras["green"] = {"contradicted": 2}
    return made.to_json().encode()


@pytest.fixture
def hub(fake_hub, monkeypatch):
    """The shipped figures (`bootstrap`), and lab-f's generated result as the inference job leaves it: committed,
    then recorded (signed) in the ledger by the job's own call."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["bootstrap", "--hub", REPO]) == 0
    api = maintainers()
    data = honest_result()
    api.upload_file(path_or_fileobj=data, path_in_repo=HONEST, repo_id=REPO, repo_type="dataset")
    head = api.repo_info(REPO, repo_type="dataset").sha
    ledger.record_results(api, REPO, "lab-f", owner="lab-f", name="F", institution="Lab",
                          files={"mimic-cxr.findings": data}, pr=1, head=head, job="inference",
                          tree=ledger.folder_tree(api, REPO, head, "lab-f"))
    return fake_hub


def board() -> pd.DataFrame:
    return datasets.load_dataset(REPO, split="leaderboard", download_mode="force_redownload").to_pandas()


def aggregate(monkeypatch, keys: list[signing.SigningKey] | None = None) -> int:
    """The aggregate job as it runs: the public keys configured (the conftest's maintainers' key by default), no
    private key in its process."""
    if keys is not None:
        monkeypatch.setenv(signing.KEYS_ENV, " ".join(k.public_text() for k in keys))
    with monkeypatch.context() as job:
        job.delenv(signing.KEY_ENV)
        return backend(["aggregate", "--hub", REPO])


def shown(frame: pd.DataFrame) -> dict:
    """What the board shows of each row: (rank, 1/RadCliQ-v1, GREEN), by model, dataset and task."""
    return {(r.model, r.dataset, r.task): (None if pd.isna(r.rank) else int(r.rank), r.radcliq_v1,
                                           None if pd.isna(r.green) else r.green) for r in frame.itertuples()}


def forged_entries(forge) -> dict[str, bytes]:
    """The attacker's pull request: a generated result, an imported figure, and ledger records vouching for them
    and for lab-f's withheld verdicts, each record made by `forge(path, record)`."""
    made = result("Forged X", 9.9, provenance="generated").to_json().encode()
    figure = json.loads((SHIPPED / IMPORTED / "mimic-cxr.findings.CheXagent.json").read_bytes())
    figure["model"]["name"], figure["metrics"]["radcliq_v1"]["value"] = "Forged Import", 9.9
    figure = json.dumps(figure, indent=2).encode()
    records = {
        FORGED_ENTRIES[0]: ledger.with_results(None, "lab-x", owner="lab-x", name="Forged X", institution="",
                                               files={"mimic-cxr.findings": made}, pr=7, head="1" * 40,
                                               job="inference"),
        FORGED_ENTRIES[1]: ledger.approval(FORGED_IMPORT, figure, by="maintainer"),
        FORGED_ENTRIES[2]: ledger.approval(HONEST, honest_result(), by="maintainer", withheld={"green": "x"}),
    }
    return {FORGED_RESULT: made, FORGED_IMPORT: figure,
            **{path: json.dumps(forge(path, record), indent=1).encode() for path, record in records.items()}}


def merged_by_the_button(files: dict[str, bytes]) -> None:
    """The attacker's pull request, refused by the review, merged anyway with the Hub's button."""
    pr = HfApi(token="hf_attacker").create_commit(REPO, [CommitOperationAdd(p, d) for p, d in files.items()],
                                                  repo_type="dataset", commit_message="Ledger: review", create_pr=True)
    maintainers().merge_pull_request(REPO, pr.pr_num, repo_type="dataset")


def genuine_signature(hub) -> dict:
    return json.loads(hub.files(REPO, repo_type="dataset")[f"{ledger.SUBMISSIONS}/lab-f.json"])[signing.FIELD]


ATTACKER = signing.generate()[1]
FORGERIES = {
    "unsigned": (lambda hub: lambda path, record: record, "unsigned (a ledger made before entries were signed"),
    "another key": (lambda hub: ATTACKER.sign, f"signed by key {ATTACKER.id}, not one of the maintainers'"),
    "a genuine signature moved": (lambda hub: lambda path, record: {**record, "signature": genuine_signature(hub)},
                                  "its signature does not verify under key"),
}


@pytest.mark.parametrize("how", FORGERIES)
def test_ledger_entries_a_merged_pull_request_forged_vouch_for_nothing(hub, monkeypatch, capsys, how):
    assert aggregate(monkeypatch) == 0
    before = shown(board())
    assert before[("F", "mimic-cxr", "findings")][2] is None  # GREEN withheld until a maintainer's review
    forge, reason = FORGERIES[how]
    merged_by_the_button(forged_entries(forge(hub)))
    assert set(FORGED_ENTRIES) <= set(hub.files(REPO, repo_type="dataset"))  # on main, every one
    capsys.readouterr()
    assert aggregate(monkeypatch) == 1  # the job names each, and fails
    out, err = capsys.readouterr()
    for path in FORGED_ENTRIES:
        assert f"left out: {path}: {reason}" in err
    assert f"left out: {FORGED_IMPORT}: not among the" in err and "not recorded by the maintainers" in err
    assert "unranked: Forged X (mimic-cxr findings): not re-scored by the maintainers' review job" in out
    after = shown(board())
    forged_row = after.pop(("Forged X", "mimic-cxr", "findings"))
    assert forged_row[0] is None and after == before  # nothing else moved: lab-f's GREEN still withheld
    assert not any(model == "Forged Import" for model, _, _ in after)


@pytest.mark.parametrize("how", FORGERIES)
def test_a_job_never_builds_on_a_forged_entry_nor_signs_it(hub, how):
    forge, reason = FORGERIES[how]
    merged_by_the_button(forged_entries(forge(hub)))
    with pytest.raises(InputError, match=re.escape(f"{FORGED_ENTRIES[0]}: {reason}") + ".*the job writes nothing over"):
        ledger.record_results(maintainers(), REPO, "lab-x", owner="lab-x", name="X", institution="",
                              files={"mimic-cxr.findings": b"{}"}, pr=8, head="2" * 40, job="review")


def test_a_maintainers_review_replaces_a_forged_one(hub, monkeypatch, capsys):
    merged_by_the_button(forged_entries(ATTACKER.sign))
    assert backend(["approve", "--hub", REPO, HONEST, "--by", "maintainer", "--note", "read both: judge right"]) == 0
    assert aggregate(monkeypatch) == 1  # the two other forged entries are still named
    assert shown(board())[("F", "mimic-cxr", "findings")][2] == pytest.approx(0.83)


def test_an_honest_run_signs_what_it_writes_and_ranks_as_before(hub, monkeypatch):
    """Every entry the jobs wrote verifies under the configured key alone; the board ranks the maintainers' rows."""
    entries = {p: json.loads(d) for p, d in hub.files(REPO, repo_type="dataset").items()
               if p.startswith(f"{ledger.LEDGER}/")}
    assert entries and all(signing.problem(p, r, signing.public_keys(own=False)) is None for p, r in entries.items())
    assert aggregate(monkeypatch) == 0
    rows = board()
    assert rows["rank"].notna().sum() == len(list((SHIPPED / IMPORTED).glob("*.json"))) + 1  # lab-f ranked


def test_keys_rotate_old_entries_verify_while_their_key_is_listed(hub, monkeypatch, capsys):
    old = signing.signing_key()
    assert aggregate(monkeypatch) == 0
    before = shown(board())
    text, new = signing.generate()
    monkeypatch.setenv(signing.KEY_ENV, text)  # the jobs' secret replaced, both public keys listed
    assert aggregate(monkeypatch, [old, new]) == 0 and shown(board()) == before
    assert backend(["approve", "--hub", REPO, HONEST, "--by", "maintainer"]) == 0  # signed by the new key
    review = json.loads(hub.files(REPO, repo_type="dataset")[ledger.approval_path(HONEST)])
    assert review[signing.FIELD]["key"] == new.id
    assert aggregate(monkeypatch, [old, new]) == 0
    reviewed = shown(board())
    assert reviewed[("F", "mimic-cxr", "findings")][2] == pytest.approx(0.83)

    capsys.readouterr()
    assert aggregate(monkeypatch, [new]) == 1  # the old key dropped too early: its entries count for nothing
    assert f"ledger/submissions/lab-f.json: signed by key {old.id}, not one of the maintainers'" in \
        capsys.readouterr().err
    assert shown(board())[("F", "mimic-cxr", "findings")][0] is None

    monkeypatch.setenv(signing.KEYS_ENV, " ".join(k.public_text() for k in (old, new)))
    assert backend(["sign-ledger", "--hub", REPO]) == 0
    assert f"ledger/submissions/lab-f.json: signed by key {old.id}, re-signed with key {new.id}" in \
        capsys.readouterr().out
    assert aggregate(monkeypatch, [new]) == 0 and shown(board()) == reviewed


def test_an_unsigned_ledger_is_refused_until_a_maintainer_signs_it(hub, monkeypatch, capsys):
    assert aggregate(monkeypatch) == 0
    before = shown(board())
    api = maintainers()
    old = {p: json.loads(d) for p, d in hub.files(REPO, repo_type="dataset").items()
           if p.startswith(f"{ledger.LEDGER}/")}
    unsigned = {p: json.dumps({k: v for k, v in r.items() if k != signing.FIELD}).encode() for p, r in old.items()}
    stray = f"{ledger.IMPORTS}/mimic-cxr.findings.stray.json"  # a forged one beside them: never signed again
    unsigned[stray] = json.dumps(ATTACKER.sign(stray, {"path": "imported/x.json", "sha256": "0" * 64})).encode()
    hub.push_raw("hf_maintainer", REPO, "main", unsigned, title="a ledger as rexrank wrote it before signatures")
    capsys.readouterr()
    assert aggregate(monkeypatch) == 1
    err = capsys.readouterr().err
    assert all(f"left out: {p}: unsigned (" in err for p in old) and "sign-ledger --hub ORG/NAME" in err
    assert shown(board())[("F", "mimic-cxr", "findings")][0] is None  # its result counts as not re-scored
    with pytest.raises(InputError, match="unsigned"):  # and no job builds on it
        ledger.record_results(api, REPO, "lab-f", owner="lab-f", name="F", institution="", files={}, pr=2,
                              head="3" * 40, job="review")

    head = api.repo_info(REPO, repo_type="dataset").sha
    assert backend(["sign-ledger", "--hub", REPO, "--list"]) == 2  # the stray one is refused
    out = capsys.readouterr().out
    assert all(f"{p}: unsigned, to be signed (" in out for p in old) and "owner lab-f" in out
    assert f"{stray}: left as it is: signed by key {ATTACKER.id}" in out
    assert api.repo_info(REPO, repo_type="dataset").sha == head  # listed only
    assert backend(["sign-ledger", "--hub", REPO]) == 2
    assert all(f"{p}: unsigned, signed (" in capsys.readouterr().out for p in old)
    assert aggregate(monkeypatch) == 1 and f"left out: {stray}: signed by key" in capsys.readouterr().err
    hub.push_raw("hf_maintainer", REPO, "main", {stray: None}, title="remove the stray entry")
    assert aggregate(monkeypatch) == 0 and shown(board()) == before


def test_the_key_is_made_once_kept_private_and_needed_by_every_job_that_signs(hub, tmp_path, monkeypatch, capsys):
    out = tmp_path / "ledger-key.txt"
    assert backend(["ledger-key", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    key = signing.signing_key(out.read_text())
    assert stat.S_IMODE(out.stat().st_mode) == 0o600 and len(base64.b64decode(out.read_text())) == 32
    assert f"public key, for REXRANK_LEDGER_KEYS: {key.public_text()}" in printed and key.id in printed
    assert out.read_text().strip() not in printed  # the private key is in the file only
    assert backend(["ledger-key", "--out", str(out)]) == 2  # never over an existing key
    assert "already exists" in capsys.readouterr().err

    files = hub.files(REPO, repo_type="dataset")
    monkeypatch.delenv(signing.KEY_ENV)
    for job in (["approve", "--hub", REPO, HONEST, "--by", "maintainer"], ["sign-ledger", "--hub", REPO],
                ["review", "--hub", REPO, "--pr", "1"], ["private", "--hub", REPO, "--pr", "1", "--references", "x/y"]):
        assert backend(job) == 2
        assert "REXRANK_LEDGER_KEY is not set" in capsys.readouterr().err
    assert hub.files(REPO, repo_type="dataset") == files  # nothing written


def test_a_ledger_entry_nested_past_the_parsers_depth_is_named_not_a_traceback(hub, monkeypatch, capsys):
    deep = b"[" * 100_000 + b"]" * 100_000
    merged_by_the_button({FORGED_ENTRIES[0]: deep, f"{ledger.SUBMISSIONS}/lab-y.json": b'{"owner": NaN}'})
    capsys.readouterr()
    assert aggregate(monkeypatch) == 1
    err = capsys.readouterr().err
    assert f"left out: {FORGED_ENTRIES[0]}: RecursionError" in err and "Traceback" not in err
    assert f"left out: {ledger.SUBMISSIONS}/lab-y.json: its signature" not in err  # unsigned, said so
    assert f"left out: {ledger.SUBMISSIONS}/lab-y.json: unsigned" in err
    with pytest.raises(InputError, match="not a JSON object; the job writes nothing over it"):
        ledger.record_results(maintainers(), REPO, "lab-x", owner="lab-x", name="X", institution="", files={}, pr=9,
                              head="4" * 40, job="review")
