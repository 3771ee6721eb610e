"""The board ranks what the maintainers made, whoever merged it (issue 44 item 5; docs/security.md, rule 21): an
imported row is shown only as the official figure rexrank ships under its name, or as bytes a maintainer recorded
with `python -m rexrank.backend approve`. End to end on the loopback Hub: pull requests merged by the Hub's button,
then the aggregate job."""

import json

import datasets
import pandas as pd
import pytest
from huggingface_hub import HfApi

from rexrank.backend.__main__ import main as backend
from rexrank.cli import main
from rexrank.official import IMPORTED, SHIPPED

REPO = "rexrank/results"
GENUINE = "mimic-cxr.findings.CheXagent.json"


@pytest.fixture
def hub(fake_hub, monkeypatch):
    """The results repo started from the shipped figures, as `bootstrap` starts it."""
    monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
    assert backend(["bootstrap", "--hub", REPO]) == 0
    return fake_hub


def shipped() -> list[str]:
    return sorted(p.name for p in (SHIPPED / IMPORTED).glob("*.json"))


def merged_by_the_button(files: dict[str, bytes]) -> None:
    """The attacker's pull request, merged by a maintainer with the Hub's button (no job runs before it)."""
    from huggingface_hub import CommitOperationAdd

    api = HfApi(token="hf_attacker")
    pr = api.create_commit(REPO, [CommitOperationAdd(p, d) for p, d in files.items()], repo_type="dataset",
                           commit_message="Add my official figure", create_pr=True)
    HfApi(token="hf_maintainer").merge_pull_request(REPO, pr.pr_num, repo_type="dataset")


def board() -> pd.DataFrame:
    return datasets.load_dataset(REPO, split="leaderboard", download_mode="force_redownload").to_pandas()


def a_figure(name: str, value: float) -> bytes:
    data = json.loads((SHIPPED / IMPORTED / GENUINE).read_bytes())
    data["model"]["name"] = name
    data["metrics"]["radcliq_v1"]["value"] = value
    return json.dumps(data, indent=2).encode()


def test_a_forged_imported_row_merged_by_the_button_is_not_on_the_board(hub, capsys):
    merged_by_the_button({f"{IMPORTED}/mimic-cxr.findings.forged.json": a_figure("Forged", 9.9)})
    assert f"{IMPORTED}/mimic-cxr.findings.forged.json" in hub.files(REPO, repo_type="dataset")  # it is on main
    capsys.readouterr()
    assert backend(["aggregate", "--hub", REPO]) == 1  # the job says so, and fails
    err = capsys.readouterr().err
    assert f"left out: {IMPORTED}/mimic-cxr.findings.forged.json: not among the {len(shipped())} official figures" \
        in err and "not recorded by the maintainers (ledger/imported/)" in err
    shown = board()
    assert "Forged" not in set(shown["model"]) and len(shown) == shown["rank"].notna().sum() == len(shipped())


def test_a_genuine_row_with_one_number_changed_is_not_on_the_board(hub, capsys):
    data = json.loads(hub.files(REPO, repo_type="dataset")[f"{IMPORTED}/{GENUINE}"])
    data["metrics"]["radcliq_v1"]["value"] = 1.741  # ReXrank published 0.741
    merged_by_the_button({f"{IMPORTED}/{GENUINE}": json.dumps(data, indent=2).encode()})
    assert backend(["aggregate", "--hub", REPO]) == 1
    assert f"{IMPORTED}/{GENUINE}: differs from the official figure" in capsys.readouterr().err
    shown = board()
    mimic = shown[(shown["dataset"] == "mimic-cxr") & (shown["task"] == "findings")]
    assert "CheXagent" not in set(mimic["model"]) and len(shown) == len(shipped()) - 1
    assert shown["rank"].notna().all()  # the other official rows rank as before


def test_a_figure_a_maintainer_recorded_is_ranked_until_its_bytes_change(hub, capsys):
    path = f"{IMPORTED}/mimic-cxr.findings.newer.json"
    HfApi(token="hf_maintainer").upload_file(path_or_fileobj=a_figure("Newer", 5.0), path_in_repo=path,
                                             repo_id=REPO, repo_type="dataset")
    with pytest.raises(SystemExit):  # the maintainer names themselves
        backend(["approve", "--hub", REPO, path])
    assert backend(["approve", "--hub", REPO, path, "--by", "maintainer", "--note", "rexrank.ai, 2026-01"]) == 0
    assert backend(["aggregate", "--hub", REPO]) == 0
    row = board().set_index("model").loc["Newer"]
    assert row["rank"] == 1 and row["provenance"] == "imported"  # above every published figure
    merged_by_the_button({path: a_figure("Newer", 9.9)})
    assert backend(["aggregate", "--hub", REPO]) == 1
    assert f"{path}: not among the" in capsys.readouterr().err and "Newer" not in set(board()["model"])
    assert backend(["approve", "--hub", REPO, "README.md", "--by", "maintainer"]) == 2  # only the two kinds


def test_every_shipped_figure_imported_the_documented_way_ranks_as_before(reference_dir, tmp_path, capsys):
    """`rexrank import-rexrank-csv --out` from ReXrank's tables (docs: resources/official/README.md), then the
    aggregate job on the folder: every figure the package ships is on the board and ranked by its 1/RadCliQ-v1."""
    from rexrank.board.aggregate import aggregate

    tables = sorted((reference_dir / "rexrank_results").glob("*.csv"))
    assert main(["import-rexrank-csv", *map(str, tables), "--out", str(tmp_path), "--as-of", "2025-09"]) == 0
    shown = aggregate(tmp_path)
    assert shown.attrs["unreadable"] == [] and len(shown) == shown["rank"].notna().sum() == len(shipped())
    for _, group in shown.groupby(["dataset", "task"]):
        ordered = group.sort_values("rank")
        assert ordered["radcliq_v1"].is_monotonic_decreasing and ordered["rank"].iloc[0] == 1


def test_a_maintainer_lists_the_contradicted_studies_and_records_the_review(hub, tmp_path, capsys):
    """A generated result whose GREEN has two contradicted verdicts: withheld by the aggregate job, which says how to
    review it; `approve --list` names the studies (ids only), `approve --by` records the review, the value shows."""
    from fixtures.board import result, reviewed

    from rexrank.files import file_sha256
    from rexrank.results import MetricResult
    from rexrank.signature import Signature

    folder = tmp_path / "repo" / "submissions" / "lab-f"
    (folder / "per_study").mkdir(parents=True)
    table = folder / "per_study" / "mimic-cxr.findings.parquet"
    pd.DataFrame({"study_id": ["s1", "s2", "s3"], "green": [1.0, 1.0, 0.5],
                  "green.contradicted": [1, 1, 0]}).to_parquet(table, index=False)
    made = result("F", 5.0, provenance="generated")
    made.metrics["green"] = MetricResult(0.83, 0.83, 0.5, 1.0, 3, "mean", signature=Signature("green", "4"))
    made.extras["green"] = {"contradicted": 2}
    made.companions["per_study.parquet"] = file_sha256(table)
    path = made.write(folder / "results" / "mimic-cxr.findings.json")
    reviewed(tmp_path / "repo", "lab-f", {"mimic-cxr.findings": path.read_bytes()})
    HfApi(token="hf_maintainer").upload_folder(folder_path=str(tmp_path / "repo"), repo_id=REPO, repo_type="dataset")
    capsys.readouterr()
    assert backend(["aggregate", "--hub", REPO]) == 0
    name = "submissions/lab-f/results/mimic-cxr.findings.json"
    assert f"withheld: F (mimic-cxr findings): green; review: python -m rexrank.backend approve --hub {REPO} {name}" \
        in capsys.readouterr().out
    assert pd.isna(board().set_index("model").loc["F", "green"])
    assert backend(["approve", "--hub", REPO, name, "--by", "maintainer", "--list"]) == 0
    assert f"{name}: green: 2 contradicted studies: s1, s2" in capsys.readouterr().out
    assert not any(p.startswith("ledger/reviews/") for p in hub.files(REPO, repo_type="dataset"))  # listed only
    assert backend(["approve", "--hub", REPO, name, "--by", "maintainer", "--note", "read s1, s2: judge right"]) == 0
    assert backend(["aggregate", "--hub", REPO]) == 0
    assert board().set_index("model").loc["F", "green"] == pytest.approx(0.83)
