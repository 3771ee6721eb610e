"""The board's Compare tab without Gradio: two verified models paired on the per-study tables their verified results
name, the same numbers `rexrank compare` prints, and every way a pair cannot be compared, said in words (an imported
row, a private set, a table swapped after review, a result nobody verified, a path the board should not follow)."""

import pandas as pd
import pytest
from fixtures.outputs import written

from rexrank.board.aggregate import aggregate
from rexrank.board.compare import COLUMNS, compare
from rexrank.cli import main
from rexrank.demo.board import DRAWN, demo_keys, demo_results_repo
from rexrank.scorers import METRICS, inverted, shown

pytestmark = pytest.mark.slow  # each test builds and aggregates a results repo, most on the loopback Hub

TABLE = "submissions/{}/per_study/mimic-cxr.findings.parquet"


@pytest.fixture
def repo(tmp_path):
    return demo_results_repo(tmp_path / "results")


def test_two_verified_models_get_the_numbers_rexrank_compare_prints(repo, capsys):
    heading, table = compare(aggregate(repo, demo_keys()), str(repo), "mimic-cxr", "findings", "Demo-Careful",
                             "Demo-Template", trials=300, seed=3)
    assert table.columns.tolist() == list(COLUMNS)
    assert "500 paired studies, 300 resamples and randomisations, seed 3" in heading
    assert main(["compare", str(repo / TABLE.format("demo-careful")), str(repo / TABLE.format("demo-template")),
                 "--trials", "300", "--seed", "3"]) == 0
    printed = {line.split()[0]: line.split() for line in capsys.readouterr().out.splitlines()[4:]}
    assert table["Metric"].tolist()[0] == "1/RadCliQ-v1"  # the ranking metric first, as on the board
    # every metric the demo draws, each as the CLI names it (1/ before a metric shown as 1 / its mean)
    names = {shown(m): "1/" * inverted(m) + m for m in METRICS}
    assert sorted(table["Metric"]) == sorted(shown(m) for m in DRAWN)
    for _, row in table.iterrows():
        cli = printed[names[row["Metric"]]]
        assert [row["A − B"], row["p (bootstrap)"], row["p (AR)"]] == [cli[1], cli[4], cli[5]]
        assert row["95% CI of A − B"] == f"{cli[2]} {cli[3]}"
    judged = table.set_index("Metric").loc["GREEN"]  # every study has a score: an unread one is at the worst
    assert int(judged["Studies"]) == 500 and judged["Note"] == ""


def test_what_cannot_be_compared_says_why(repo):
    board = aggregate(repo, demo_keys())
    why = {pair: compare(board, str(repo), dataset, "findings", *pair, trials=50)
           for dataset, pair in (("mimic-cxr", ("Demo-Careful", "Demo-Imported (synthetic)")),
                                 ("rexgradient", ("Demo-Careful", "Demo-Template")),
                                 ("mimic-cxr", ("Demo-Careful", "Demo-Careful")),
                                 ("mimic-cxr", ("Demo-Careful", "Nobody")))}
    assert all(table.empty for _, table in why.values())
    assert "as published: ReXrank published no per-study scores" in why["Demo-Careful", "Demo-Imported (synthetic)"][0]
    assert "ReXGradient is private" in why["Demo-Careful", "Demo-Template"][0]
    assert "Pick two different models" in why["Demo-Careful", "Demo-Careful"][0]
    assert "Nobody has no row here" in why["Demo-Careful", "Nobody"][0]


def test_a_table_swapped_after_review_is_not_compared(repo):
    board = aggregate(repo, demo_keys())
    swapped = pd.read_parquet(repo / TABLE.format("demo-template"))
    swapped["radcliq_v1"] = 0.01  # a far better RadCliQ-v1 than the verified result's
    swapped.to_parquet(repo / TABLE.format("demo-template"))
    heading, table = compare(board, str(repo), "mimic-cxr", "findings", "Demo-Careful", "Demo-Template", trials=50)
    assert table.empty and "not the one its verified result names (sha256 differs)" in heading


def test_only_a_verified_result_is_compared_and_only_at_the_path_the_board_may_read(repo):
    result = repo / "submissions" / "demo-template" / "results" / "mimic-cxr.findings.json"
    result.write_text(result.read_text().replace('"name": "Demo-Template"', '"name": "Demo-Template "'))
    board = aggregate(repo, demo_keys())  # a result changed after the job wrote it is unverified: its table is not read
    heading, table = compare(board, str(repo), "mimic-cxr", "findings", "Demo-Careful", "Demo-Template", trials=50)
    assert table.empty and "Demo\\-Template is not verified (changed since the demo job wrote it" in heading

    board = aggregate(demo_results_repo(repo.parent / "again"), demo_keys())
    row = (board["model"] == "Demo-Template") & (board["dataset"] == "mimic-cxr") & (board["task"] == "findings")
    escaping = board.copy()
    escaping.loc[row, "submission"] = "../../outside"
    heading, table = compare(escaping, str(repo), "mimic-cxr", "findings", "Demo-Careful", "Demo-Template", trials=50)
    assert table.empty and "the board names no readable per-study table" in heading


def test_a_metric_made_otherwise_for_one_model_is_listed_not_compared(repo):
    board = aggregate(repo, demo_keys())
    row = (board["model"] == "Demo-Template") & (board["dataset"] == "mimic-cxr") & (board["task"] == "findings")
    board.loc[row, "green_key"] = "green:1|backend:judge:another-model"
    _, table = compare(board, str(repo), "mimic-cxr", "findings", "Demo-Careful", "Demo-Template", trials=50)
    green = table.set_index("Metric").loc["GREEN"]
    assert green["A − B"] == "" and "their signatures differ" in green["Note"]
    assert table.set_index("Metric").loc["BLEU", "A − B"] != ""  # the others are still compared


def test_two_models_merged_on_the_hub_compare_from_its_per_study_tables(tmp_path, fake_hub, monkeypatch):
    from fixtures.submissions import score
    from huggingface_hub import HfApi

    from rexrank import demo
    from rexrank.backend.__main__ import main as backend
    from rexrank.board.sources import read_board

    HfApi().create_repo("rexrank/results", repo_type="dataset", token="hf_maintainer")
    for pr, (system, name) in enumerate((("demo-careful", "Careful"), ("demo-template", "Template")), 1):
        monkeypatch.setenv("HF_TOKEN", "hf_researcher")
        assert main(["submit", "--results", str(score(tmp_path / system, system)), "--name", name, "--institution",
                     "Lab", "--repo", "rexrank/results"]) == 0
        monkeypatch.setenv("HF_TOKEN", "hf_maintainer")
        assert backend(["review", "--hub", "rexrank/results", "--pr", str(pr), "--dataset",
                        f"mimic-cxr={demo.DATASET}"]) == 0
        assert backend(["merge", "--hub", "rexrank/results", "--pr", str(pr)]) == 0
    assert backend(["aggregate", "--hub", "rexrank/results"]) == 0
    heading, table = compare(read_board("rexrank/results"), "rexrank/results", "mimic-cxr", "findings", "Careful",
                             "Template", trials=200)
    ours = [pd.read_parquet(written(tmp_path / s, "mimic-cxr.findings.per_study.parquet")) for s in ("demo-careful",
                                                                                            "demo-template")]
    bleu = table.set_index("Metric").loc["BLEU"]
    assert float(bleu["A − B"]) == pytest.approx(ours[0]["bleu2"].mean() - ours[1]["bleu2"].mean(), abs=5e-5)
    assert f"{len(ours[0])} paired studies" in heading
