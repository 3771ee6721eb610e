"""`rexrank studies OUT`: why a model scored low. The lowest studies by a metric with reference and prediction side by
side and every metric's score, the studies where the metrics disagree most, with --vs where two models differ most,
and --plot the per-study distributions for a paper; all read back from what `rexrank score --out` wrote."""

import json
from pathlib import Path

import pandas as pd
import pytest

from rexrank import demo
from rexrank.cli import main
from rexrank.results import result_paths
from rexrank.studies import Scored, disagreements, edges, in_bin, worst

SPLIT = {r["study_id"]: r["findings"] for r in map(json.loads, demo.DATASET.read_text().splitlines())}


@pytest.fixture
def out(tmp_path_factory, local_models):
    """Two demo systems scored with BLEU-2 and BERTScore (tiny random weights) into one --out."""
    folder = tmp_path_factory.mktemp("studies") / "out"
    for system in ("demo-careful", "demo-template"):
        assert main(["score", "--predictions", str(demo.predictions(system, "findings")), "--dataset",
                     str(demo.DATASET), "--task", "findings", "--metrics", "bleu2,bertscore", "--resamples", "10",
                     "--quiet", "--out", str(folder)]) == 0
    return folder


def table(folder: Path, model: str) -> pd.DataFrame:
    return pd.read_parquet(result_paths(folder, "dataset", "findings", model)[1])


def blocks(said: str) -> list[list[str]]:
    """Each listed study's lines: its numbered line, then its texts."""
    listed: list[list[str]] = []
    for line in said.splitlines():
        if line[:5].strip().rstrip(".").isdigit():
            listed.append([line])
        elif listed and line.startswith("      "):
            listed[-1].append(line.strip())
    return listed


def test_the_lowest_studies_side_by_side_with_their_scores(out, capsys):
    capsys.readouterr()
    assert main(["studies", str(out)]) == 2  # two models there: which one is asked for, in one line
    assert capsys.readouterr().err == (f"rexrank: error: {out}: 2 results (dataset findings of 'demo-careful', "
                                       "dataset findings of 'demo-template'): choose one with --dataset, --task or "
                                       "--model-name\n")
    assert main(["studies", str(out), "--model-name", "demo-template", "--dataset", str(demo.DATASET), "--worst", "3",
                 "--by", "bleu2"]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"demo-template · dataset test · findings · 45 studies (references: {demo.DATASET})")
    scores = table(out, "demo-template").sort_values("bleu2", kind="stable")
    lowest = blocks(said.split("\nthe 3 lowest by bleu2:\n")[1].split("\n\n")[0])
    assert [b[0].split()[1] for b in lowest] == scores["study_id"].head(3).tolist()
    first = scores.iloc[0]
    assert f"bleu2 {first['bleu2']:.4f} · bertscore {first['bertscore']:.4f}" in lowest[0][0]  # every metric's score
    predictions = {r["study_id"]: r["prediction"] for r in map(json.loads, demo.predictions(
        "demo-template", "findings").read_text().splitlines())}
    text = " ".join(lowest[0])
    assert SPLIT[first["study_id"]].split(". ")[0] in text and "reference:" in text and "prediction:" in text
    assert (predictions[first["study_id"]] or '""').split(". ")[0] in text


def test_where_the_metrics_disagree_and_where_two_models_differ(out, capsys):
    assert main(["studies", str(out), "--model-name", "demo-careful", "--worst", "2", "--vs", "demo-template"]) == 0
    said = capsys.readouterr().out
    assert "(give --dataset SPLIT, the split it was scored on, to see the references beside)" in said
    mine, theirs = table(out, "demo-careful"), table(out, "demo-template")
    pct = pd.DataFrame({m: mine[m].rank(pct=True) for m in ("bleu2", "bertscore")})
    spread = (pct.max(axis=1) - pct.min(axis=1)).sort_values(ascending=False, kind="stable")
    listed = blocks(said.split("where the metrics disagree most")[1].split("\n\n")[0])
    assert [b[0].split()[1] for b in listed] == mine.loc[spread.index[:2], "study_id"].tolist()
    apart = (mine.set_index("study_id")["bleu2"] - theirs.set_index("study_id")["bleu2"])
    biggest = apart.abs().sort_values(ascending=False, kind="stable").index[:2].tolist()
    listed = blocks(said.split("differ most by bleu2")[1])
    assert [b[0].split()[1] for b in listed] == biggest
    assert f"better {apart[biggest[0]]:+.3f}" in listed[0][0] and "B's prediction:" in " ".join(listed[0])


def test_plot_writes_the_distribution_figure_for_a_paper(out, tmp_path, capsys):
    figure = tmp_path / "fig.png"
    assert main(["studies", str(out), "--model-name", "demo-careful", "--vs", "demo-template", "--plot",
                 str(figure)]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and capsys.readouterr().out.endswith(f"wrote {figure}\n")
    assert main(["studies", str(out), "--model-name", "demo-careful", "--plot", str(tmp_path / "fig.txt")]) == 2
    assert "give a .png, .pdf or .svg file" in capsys.readouterr().err


def test_lower_is_better_metrics_are_worst_at_their_highest_and_bins_cover_every_study():
    frame = pd.DataFrame({"study_id": [f"s{i}" for i in range(7)],
                          "radcliq_v1": [0.1, 2.5, 0.3, 1.0, 0.0, 2.5, 0.7],
                          "bleu2": [0.9, 0.0, 0.5, 0.2, 1.0, 0.1, 0.4]})
    scored = Scored(None, Path("x.json"), frame)
    assert worst(scored, "radcliq_v1", 2)["study_id"].tolist() == ["s1", "s5"]  # RadCliQ: lower is better
    assert worst(scored, "bleu2", 2)["study_id"].tolist() == ["s1", "s5"]
    cut = edges(frame["bleu2"], bins=4)
    assert sum(len(in_bin(scored, "bleu2", i, bins=4)) for i in range(len(cut) - 1)) == 7  # the top edge included
    assert in_bin(scored, "bleu2", 3, bins=4)["study_id"].tolist() == ["s0", "s4"]
    assert disagreements(scored, 1)["study_id"].tolist()[0] in {f"s{i}" for i in range(7)}


@pytest.mark.parametrize(("extra", "said"), [
    (["--by", "bleu4"], "no study has a bleu4 of its own"),
    (["--plot", "figure.jpg"], "give a .png, .pdf or .svg file"),
    (["--vs", "Nobody"], "model 'Nobody'"),
])
def test_every_refusal_comes_before_any_output_and_names_what_was_asked(tmp_path, capsys, extra, said):
    """A refused --by, --plot or --vs is one line and exit 2, with nothing printed before it (the header and the
    whole listing used to come first)."""
    folder = tmp_path / "out"
    assert main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                 str(demo.DATASET), "--task", "findings", "--metrics", "bleu2,bleu4", "--resamples", "10", "--quiet",
                 "--out", str(folder)]) == 0
    capsys.readouterr()
    assert main(["studies", str(folder), *extra]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and said in printed.err and "Traceback" not in printed.err
    assert len(printed.err.strip().splitlines()) == 1
