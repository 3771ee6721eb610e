"""The data-use guard, played by a careless or hostile file name: report text reaches a judge off this machine only
when the data is known to be public or the endpoint is allowed. The judge here is a fake on one of this machine's
non-loopback addresses, and each test asserts what reached it. The reports are synthetic; only the study ids are
the official splits' (`src/rexrank/resources/splits/`)."""

import json

import pytest

from rexrank.cli import main
from rexrank.data.build import official_ids
from rexrank.llm.guard import check_data_use, is_loopback


def split_file(path, ids):
    """A ReXrank-format split JSON of synthetic reports under `ids`."""
    path.write_text(json.dumps({i: {"section_findings": f"Synthetic finding {n}.", "section_impression": "None."}
                                for n, i in enumerate(ids)}))
    return path


def predictions_for(path, ids):
    path.write_text("".join(json.dumps({"study_id": i, "prediction": "No acute findings."}) + "\n" for i in ids))
    return path


def judged(tmp_path, dataset, ids, judge, *more):
    return main(["score", "--predictions", str(predictions_for(tmp_path / "preds.jsonl", ids)), "--dataset",
                 str(dataset), "--task", "findings", "--metrics", "fineradscore", "--judge-url", judge.url,
                 "--judge-model", judge.model, "--fineradscore-shots", "zero-shot", "--out", str(tmp_path / "out"),
                 "--quiet", *more])


MIMIC = (official_ids("mimic-cxr", "test") or [])[:12]
CHEXPERT = (official_ids("chexpert-plus", "valid") or [])[:12]
IU = (official_ids("iu-xray", "test") or [])[:12]


@pytest.mark.parametrize(("name", "ids", "said"), [
    ("mimic_test.json", MIMIC, "MIMIC-CXR reports (12 of its study ids are in the official mimic-cxr test split)"),
    ("iu_xray_test.json", MIMIC, "MIMIC-CXR reports (12 of its study ids are in the official mimic-cxr test"),
    ("chexpert_valid.json", CHEXPERT, "CheXpert Plus reports (12 of its study ids are in the official chexpert-plus"),
])
def test_a_credentialed_split_is_known_by_its_study_ids_whatever_its_name(tmp_path, remote_openai, capsys, name,
                                                                           ids, said):
    assert judged(tmp_path, split_file(tmp_path / name, ids), ids, remote_openai) == 2
    assert said in capsys.readouterr().err
    assert remote_openai.requests == []  # nothing reached the judge


def test_a_rexrank_built_credentialed_set_is_known_by_its_metadata_whatever_its_folder(tmp_path, remote_openai,
                                                                                      capsys):
    ids = [f"9{n:07d}" for n in range(12)]  # not official ids: only the build metadata can tell
    source = split_file(tmp_path / "ReXRank_MIMICCXR_test.json", ids)
    for folder in ("mimic", "iu-xray"):
        assert main(["build-dataset", "mimic-cxr", "--source", str(source), "--out",
                     str(tmp_path / "datasets" / folder)]) == 0
        capsys.readouterr()
        assert judged(tmp_path, tmp_path / "datasets" / folder, ids, remote_openai) == 2
        assert "its build metadata says mimic-cxr" in capsys.readouterr().err
    assert remote_openai.requests == []


@pytest.mark.slow
def test_text_of_unknown_origin_needs_an_allowed_endpoint(tmp_path, remote_openai, capsys):
    ids = [f"case-{n}" for n in range(12)]
    dataset = split_file(tmp_path / "my_public_reports.json", ids)
    assert judged(tmp_path, dataset, ids, remote_openai) == 2
    assert "it is not known to be public" in capsys.readouterr().err and remote_openai.requests == []
    judged(tmp_path, dataset, ids, remote_openai, "--allow-endpoint", remote_openai.url)
    asked = {m["content"].rsplit("Ground Truth Text: ", 1)[-1] for r in remote_openai.requests for m in r["messages"]}
    assert {f"Synthetic finding {n}." for n in range(12)} <= asked  # the user allowed this endpoint: all were sent


@pytest.mark.slow
def test_a_public_split_goes_to_any_endpoint(tmp_path, remote_openai):
    judged(tmp_path, split_file(tmp_path / "whatever.json", IU), IU, remote_openai)
    assert len(remote_openai.requests) >= 12  # one or two calls per study (a reply that does not parse is asked again)


def test_loopback_means_every_resolved_address_is_loopback():
    assert is_loopback("http://localhost:8000/v1") and is_loopback("http://127.0.0.2/v1")
    assert is_loopback("http://[::1]:8000/v1")
    for url in ("http://judge.invalid/v1", "http://localhost.judge.invalid/v1", "http://127.0.0.1.nip.invalid/v1",
                "http://192.0.2.7/v1", "http://[::ffff:8.8.8.8]/v1"):
        assert not is_loopback(url), url


@pytest.mark.parametrize("dataset", [None, "iu-xray", "synthetic"])
def test_a_name_alone_never_makes_text_public(dataset):
    with pytest.raises(Exception, match="known to be public"):
        check_data_use(dataset, "https://api.openai.com/v1")
