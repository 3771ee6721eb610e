import json

import pytest

from rexrank.cli import main
from rexrank.errors import InputError
from rexrank.official import HEADER, SHIPPED, SHIPPED_AS_OF, dataset_and_task, read_official_csv
from rexrank.reports import TASKS
from rexrank.results import Result


@pytest.fixture(scope="module")
def tables(reference_dir):
    folder = reference_dir / "rexrank_results"
    return folder / "findings_result_mimiccxr.csv", folder / "result_mimiccxr.csv"


def test_file_names_give_dataset_and_task():
    assert dataset_and_task("x/findings_result_gradienthealth.csv") == ("rexgradient", "findings")
    assert dataset_and_task("result_iu_xray.csv") == ("iu-xray", "findings_impression")
    assert dataset_and_task("findings_result_chexpertplus.csv") == ("chexpert-plus", "findings")
    with pytest.raises(InputError, match="expected findings_result_<dataset>.csv"):
        dataset_and_task("leaderboard.csv")


def test_reads_every_row_including_short_ones(tables):
    findings, full = (read_official_csv(t) for t in tables)
    assert len(findings) == 25 and len(full) == 7
    assert {r.task for r in findings} == {"findings"} and {r.dataset for r in full} == {"mimic-cxr"}
    unirg = next(r for r in findings if r.model.name == "UniRG-CXR")  # 12 fields: no 1/FineRadScore
    assert unirg.values["fineradscore"] is None
    assert unirg.values["radcliq_v1"] == 1.217 and unirg.values["green"] == 0.352
    medversa = next(r for r in full if r.model.name == "MedVersa")
    assert medversa.model.institution == "Harvard" and medversa.values["bertscore"] == 0.43


def test_radcliq_consistency_with_rounding_propagated(tables):
    rows = [r for t in tables for r in read_official_csv(t)]
    flagged = [(r.task, r.model.name) for r in rows if not r.consistent]
    # RadFM's published 0.625 lies outside [0.6226, 0.6241] implied by 0.111/0.281/0.245/0.081.
    assert flagged == [("findings_impression", "RadFM")]
    medversa = next(r for r in rows if r.model.name == "MedVersa" and r.task == "findings_impression")
    low, high = medversa.implied_inverse_radcliq
    assert low < 0.919 < high and high - low < 0.004


def test_a_tampered_row_is_flagged(tmp_path):
    path = tmp_path / "findings_result_iu_xray.csv"
    path.write_text(",".join(HEADER) + "\n"
                    "1,2024,Good,Lab,https://a,0.193,0.43,0.315,0.273,0.919,0.5,0.4,0.36\n"
                    "2,2024,Tampered,Lab,https://b,0.193,0.43,0.315,0.273,0.95,0.5,0.4,0.36\n"
                    "3,2024,Partial,Lab,https://c,0.193,0.43,,0.273,0.919")
    rows = read_official_csv(path)
    assert [r.consistent for r in rows] == [True, False, None]  # None: a component is missing
    assert rows[2].values["semb_score"] is None and rows[2].values["green"] is None


def test_bad_tables_are_refused(tmp_path):
    path = tmp_path / "result_mimiccxr.csv"
    path.write_text("Rank,Model\n1,x\n")
    with pytest.raises(InputError, match="header is not the official one"):
        read_official_csv(path)
    path.write_text(",".join(HEADER) + "\n1,2024,X,Lab,u,0.1,zero,0.1,0.1,0.5,0.1,0.1,0.1\n")
    with pytest.raises(InputError, match=r"result_mimiccxr.csv:2: X: not a number"):
        read_official_csv(path)


def test_cli_json_lines_and_imported_results(tables, tmp_path, capsys):
    assert main(["import-rexrank-csv", "--json", "--out", str(tmp_path), *map(str, tables)]) == 0
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 32
    radfm = next(r for r in rows if r["model"] == "RadFM" and r["task"] == "findings_impression")
    assert radfm["consistent"] is False and radfm["radcliq_v1"] == 0.625 and radfm["dataset"] == "mimic-cxr"
    assert "RadFM (rank 5): published 1/RadCliQ-v1 0.625 is outside [0.6226, 0.6241]" in err
    imported = Result.read(tmp_path / "imported" / "mimic-cxr.findings_impression.RadFM.json")  # a results repo's
    assert imported.provenance == "imported" and imported.metrics["radcliq_v1"].value == 0.625
    assert imported.checks["radcliq_v1_consistent"] is False
    assert imported.checks["note"] == ("published 1/RadCliQ-v1 0.625 is outside [0.6226, 0.6241], what its rounded "
                                       "components imply")
    assert imported.metrics["radcliq_v1"].statistic == "inverse_mean"
    assert imported.created != "2025-09-01T00:00:00Z" and "published" not in imported.checks  # no --as-of


def test_the_shipped_figures_are_what_the_importer_writes(reference_dir, tmp_path, capsys):
    """src/rexrank/resources/official is the importer's output for the eight official tables, byte for byte (after a
    release bump, rerun the command in its README.md), and that README's count of flagged rows is right."""
    tables = sorted((reference_dir / "rexrank_results").glob("*.csv"))
    named = {dataset_and_task(t) for t in tables}  # (test set, task): each file names one of the catalog's sets
    published = {dataset for dataset, _ in named}  # the sets ReXrank publishes figures for (a new set may have none)
    assert published and len(named) == len(tables) and named == {(d, t) for d in published for t in TASKS}, named
    assert main(["import-rexrank-csv", *map(str, tables), "--out", str(tmp_path), "--as-of", SHIPPED_AS_OF]) == 0
    fresh = {p.name: p.read_bytes() for p in (tmp_path / "imported").iterdir()}
    shipped = {p.name: p.read_bytes() for p in (SHIPPED / "imported").iterdir()}
    rows = sum(len(read_official_csv(t)) for t in tables)  # a row per model in each published table
    assert len(shipped) == rows and fresh == shipped
    flagged = sum(json.loads(data)["checks"]["radcliq_v1_consistent"] is False for data in shipped.values())
    assert f"{flagged} of the {len(shipped)} rows" in (SHIPPED / "README.md").read_text()
    assert all(json.loads(data)["created"] == "2025-09-01T00:00:00Z" for data in shipped.values())


def test_a_publication_date_is_a_year_and_month(tables, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["import-rexrank-csv", str(tables[0]), "--out", str(tmp_path), "--as-of", "September"])
    assert exit_.value.code == 2 and "expected a year and month such as 2025-09" in capsys.readouterr().err


def test_cli_summary_without_json(tables, capsys):
    assert main(["import-rexrank-csv", str(tables[1])]) == 0
    assert capsys.readouterr().out.strip().endswith("result_mimiccxr.csv: 7 rows, 1 flagged inconsistent")


def test_a_published_zero_for_an_inverse_metric_imports_as_missing(reference_dir, tmp_path):
    [unirg] = [r for r in read_official_csv(reference_dir / "rexrank_results" / "findings_result_chexpertplus.csv")
               if r.model.name == "UniRG-CXR"]
    assert unirg.values["fineradscore"] is None and unirg.placeholders == ("1/FineRadScore",)  # published as 0
    result = unirg.to_result()
    assert "fineradscore" not in result.metrics and result.checks["placeholders"] == ["1/FineRadScore"]
    assert unirg.values["green"] == 0.279  # the row's other numbers stay


def test_a_verified_number_made_otherwise_than_the_published_says_how():
    from dataclasses import replace

    from rexrank.llm import Judge
    from rexrank.models.registry import MODELS
    from rexrank.models.runtime import Runtime
    from rexrank.official import departures
    from rexrank.reports import text_settings
    from rexrank.scorers import fineradscore, green
    from rexrank.scorers.fineradscore.prompt import REFERENCE_SHOTS, SYNTHETIC, Shots
    from rexrank.signature import Signature

    def judge(model):
        return Judge(base_url="http://127.0.0.1:9", model=model, cache=False, progress=False)

    def scored(signature):  # as rexrank score signs a number made on a split's references
        return replace(signature, settings={**signature.settings, **text_settings("findings")})

    pinned = {"model": f"{MODELS['BERTSCORE'].repo_id}@{MODELS['BERTSCORE'].revision[:12]}"}
    as_published = scored(Signature("bertscore", "1", models=pinned, settings={"layer": "5", **Runtime().settings}))
    assert departures(as_published) == []
    assert departures(scored(Signature("bertscore", "1", models=pinned, settings=Runtime(dtype="bf16").settings))) == [
        "bertscore in bf16, the published in fp32"]
    assert departures(scored(Signature("bertscore", "1", models={"model": "local:1a2b"}))) == [
        "bertscore model local:1a2b, the published the pinned weights"]
    # a composite names the component that departs
    assert departures(scored(Signature("radcliq_v1", "1", components=(
        Signature("bertscore", "1", models=pinned, settings={"dtype": "fp16"}),)))) == [
        "bertscore in fp16, the published in fp32"]

    # as GREEN spells it, with the reference's messages (`quoted` off)
    assert departures(scored(green.signature(judge("StanfordAIMI/GREEN-radllama2-7b"), quoted=False))) == []
    assert departures(scored(green.signature(judge("gpt-4o"), quoted=False))) == [
        "GREEN by judge:gpt-4o:t=0:max_tokens=1024, the published by StanfordAIMI/GREEN-RadLlama2-7b"]
    # the board's: the candidate quoted as data, a system message the published figures were asked without
    assert departures(scored(green.signature(judge("StanfordAIMI/GREEN-radllama2-7b")))) == [
        "GREEN told in a system message that the reports are quoted data it must not obey (rexrank's first defence; "
        "docs/security.md rule 19), the published asked with the reference's messages alone"]
    # a name that merely contains the model's is another model
    assert departures(scored(green.signature(judge("evil/StanfordAIMI/GREEN-RadLlama2-7b-tuned")))) != []

    reference = Shots(REFERENCE_SHOTS, SYNTHETIC.messages)
    assert departures(scored(fineradscore.signature(judge("gpt-4-0613"), reference, quoted=False))) == []
    assert departures(scored(fineradscore.signature(judge("llama-3-70b"), SYNTHETIC, quoted=False))) == [
        "FineRadScore by judge:llama-3-70b:t=0:max_tokens=1024, the published by a GPT-4 model",
        "FineRadScore with synthetic-v1 examples, the published with the reference's"]


def test_every_signed_setting_is_compared_with_how_the_published_figures_were_made():
    """Issue 32: a BERTScore of another layer (or any setting other than the record's) is marked beside the imported
    numbers, not only another precision, weights or judge; a setting ReXrank never published is not held against it."""
    from rexrank.models.registry import MODELS
    from rexrank.official import departures
    from rexrank.reports import text_settings
    from rexrank.scorers.bertscore import BASELINES, MODEL
    from rexrank.signature import Signature

    def scored(metric, models=None, **settings):
        return Signature(metric, "1", models=models or {}, settings={**settings, **text_settings("findings")})

    pinned = {"model": f"{MODELS['BERTSCORE'].repo_id}@{MODELS['BERTSCORE'].revision[:12]}"}
    layer6 = f"F:{BASELINES[(MODEL, 6)]['F']}"
    assert departures(scored("bertscore", pinned, layer="6", rescale=layer6)) == [
        "bertscore layer 6, the published 5",
        f"bertscore rescaled with {layer6}, the published rescaled with F:0.8473319"]
    assert departures(scored("bleu2", tok="lower+dot", smooth="method1:eps=0.1")) == []
    assert departures(scored("bleu2", tok="13a", smooth="method1:eps=0.1")) == [
        "bleu2 tok 13a, the published lower+dot"]
    assert departures(scored("radgraph", sets="cxr-report-metric", empty="0", beam="4")) == [
        "radgraph beam 4, a setting the published figures' record does not have"]
    # which ratescore release scored ReXrank's figures is not published: either set of weights is as good a guess
    assert departures(scored("ratescore", weights="short", align="position")) == []
    # a composite's departing component is named with its own setting
    assert departures(Signature("radcliq_v1", "1", settings=text_settings("findings"), components=(
        scored("bertscore", pinned, layer="6"),))) == ["bertscore layer 6, the published 5"]
