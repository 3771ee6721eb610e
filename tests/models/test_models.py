"""Weight resolution against the loopback Hub, for real: download, cache, offline, pins, errors, overrides."""

import json
from pathlib import Path

import pytest
from fixtures.hub_models import serve
from fixtures.outputs import written

from rexrank import models
from rexrank.cli import main
from rexrank.models import MODELS, ModelUnavailable, resolve
from rexrank.scorers import AVAILABLE

SPEC = MODELS["BERTSCORE"]
REPO, PIN = SPEC.repo_id, SPEC.revision


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def hub_with_roberta(fake_hub, tiny_roberta):
    serve(fake_hub, {"BERTSCORE": tiny_roberta})  # distilroberta-base's real files at its real pin
    return fake_hub


def test_first_download_then_cache_then_offline(hub_with_roberta):
    hub = hub_with_roberta
    first = resolve("BERTSCORE")
    assert first.source == "hub cache" and first.commit == PIN
    assert sorted(p.name for p in first.path.iterdir()) == sorted(SPEC.files)  # what it needs, nothing else
    assert hub.downloads("model.safetensors") == 1 and hub.downloads("README.md") == 0
    assert first.identity == f"{REPO}@{PIN[:12]}"

    again = resolve("BERTSCORE")
    assert again.path == first.path and hub.downloads("model.safetensors") == 1  # a cache hit

    hub.set_offline()
    seen = len(hub.requests)
    assert resolve("BERTSCORE").path == first.path
    assert len(hub.requests) == seen  # offline: not a single request


def test_the_pin_keeps_its_files_when_main_moves(hub_with_roberta, tiny_roberta):
    hub_with_roberta.add_repo(REPO, files_of(tiny_roberta) | {"config.json": b'{"moved": true}'})  # main moves on
    pinned = resolve("BERTSCORE")
    assert pinned.commit == PIN
    assert (pinned.path / "config.json").read_bytes() == (tiny_roberta / "config.json").read_bytes()


def test_a_download_missing_a_file_fails_naming_it(fake_hub, tiny_roberta, capsys):
    served = serve(fake_hub, {"BERTSCORE": tiny_roberta})[REPO]
    del served["tokenizer_config.json"]  # a repository that lacks one of the files rexrank needs
    fake_hub.add_repo(REPO, served, sha=PIN)
    with pytest.raises(ModelUnavailable, match=r"distilbert/distilroberta-base@fb53ab880285 has no "
                                               r"tokenizer_config.json \(the download brought 5 of its 6 files\)"):
        resolve("BERTSCORE")
    assert main(["models", "download", "bertscore"]) == 3
    assert "has no tokenizer_config.json" in capsys.readouterr().out


def test_offline_without_a_copy_says_which_model_and_how_to_fix(fake_hub):
    fake_hub.set_offline()
    with pytest.raises(ModelUnavailable) as err:
        resolve("CHEXBERT")
    assert str(err.value) == (
        "CheXbert checkpoint (chexbert.pth): StanfordAIMI/RRG_scorers@3ef1a0c82b41 (chexbert.pth) is not in the "
        "Hugging Face cache (HF_HUB_OFFLINE=1). Run `rexrank models download chexbert` where there is network, or "
        "set REXRANK_MODEL_CHEXBERT=/path/to/a/local/copy (a folder or file in the reference's own format)")


def test_missing_repo_and_missing_revision(fake_hub, monkeypatch):
    fake_hub.add_repo("StanfordAIMI/RRG_scorers", {"chexbert.pth": b"x"})  # main only: the pin is not there
    with pytest.raises(ModelUnavailable, match="revision 3ef1a0c82b418549078cd93b24b12c6e67bf9862 of "
                                               "StanfordAIMI/RRG_scorers does not exist"):
        resolve("CHEXBERT")
    with pytest.raises(ModelUnavailable, match=r"google-bert/bert-base-uncased not found on the Hub \(or private: "
                                               r"set HF_TOKEN\), or set REXRANK_MODEL_BERT_BASE_UNCASED="):
        resolve("BERT_BASE_UNCASED")


def test_gated_repo_401_and_403(fake_hub, monkeypatch):
    fake_hub.add_repo("StanfordAIMI/RRG_scorers", {"chexbert.pth": b"weights"}, gated=True,
                      sha=MODELS["CHEXBERT"].revision)
    gated = r"StanfordAIMI/RRG_scorers is gated: accept its terms on the Hub and set HF_TOKEN"
    with pytest.raises(ModelUnavailable, match=gated):  # no token: 401
        resolve("CHEXBERT")
    monkeypatch.setenv("HF_TOKEN", "hf_not_allowed")
    with pytest.raises(ModelUnavailable, match=gated):  # a token without access: 403
        resolve("CHEXBERT")
    fake_hub.allow("hf_allowed", "StanfordAIMI/RRG_scorers")
    monkeypatch.setenv("HF_TOKEN", "hf_allowed")
    assert resolve("CHEXBERT").file("chexbert.pth").read_bytes() == b"weights"


def test_local_overrides_win_and_are_fingerprinted(fake_hub, tiny_roberta, tmp_path, monkeypatch):
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(tiny_roberta))
    local = resolve("BERTSCORE")
    assert local.path == tiny_roberta and local.source == f"REXRANK_MODEL_BERTSCORE={tiny_roberta}"
    assert local.identity.startswith("local:") and fake_hub.requests == []
    copy = tmp_path / "copy"
    copy.mkdir()
    for name, data in files_of(tiny_roberta).items():
        (copy / name).write_bytes(data)
    assert resolve("BERTSCORE").identity == f"local:{models.fingerprint(copy)}"  # same content, same identity
    (copy / "config.json").write_text("{}")
    assert models.fingerprint(copy) != models.fingerprint(tiny_roberta)

    models.set_override("bertscore", tmp_path / "absent")
    try:
        with pytest.raises(ModelUnavailable, match=r"--model BERTSCORE=.*absent does not exist"):
            resolve("BERTSCORE")
    finally:
        models.clear_overrides()
    with pytest.raises(ModelUnavailable, match="unknown model 'GPT': known models are BERTSCORE, CHEXBERT"):
        models.set_override("gpt", tmp_path)


def test_a_single_file_override_serves_that_file(tiny_chexbert, monkeypatch):
    monkeypatch.setenv("REXRANK_MODEL_CHEXBERT", str(tiny_chexbert))
    assert resolve("CHEXBERT").file("chexbert.pth") == tiny_chexbert


def test_models_cli_download_then_check_and_list(hub_with_roberta, fake_hub, capsys, tmp_path, monkeypatch):
    assert main(["models", "download", "bertscore"]) == 0
    assert f"BERTSCORE: distilbert/distilroberta-base@{PIN[:12]}" in capsys.readouterr().out
    fake_hub.set_offline()
    seen = len(fake_hub.requests)
    assert main(["models", "check"]) == 3  # the others are not here
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert rows["BERTSCORE"].split()[1:4] == [PIN[:12], "hub", "cache"] and "6/6" in rows["BERTSCORE"]
    assert rows["CHEXBERT"].split()[2:] == ["not", "here", "0/1", "rexrank", "models", "download", "chexbert"]
    assert len(fake_hub.requests) == seen  # checking downloads nothing
    partial = tmp_path / "roberta"
    partial.mkdir()
    (partial / "config.json").write_text("{}")
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(partial))
    assert main(["models", "check"]) == 3
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("BERTSCORE"))
    assert "1/6" in row and "put model.safetensors, vocab.json" in row
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 120 for line in out.splitlines()) and f"{REPO}@{PIN[:12]}" in out
    assert main(["models", "download", "--all"]) == 3  # offline: the others cannot be fetched
    out = capsys.readouterr().out
    assert "CHEXBERT: not available" in out and "RATE_NER: not available" in out
    assert "GREEN" not in out  # a 13.5 GB judge is fetched only when named


ENCODER_ID = "microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext"  # as radgraph.tar.gz's config names it


def radgraph_archive(tiny_radgraph: Path, bert_base: str, out: Path) -> Path:
    """The tiny RadGraph archive as the real radgraph.tar.gz is: its config names the encoder by repo id."""
    import shutil
    import tarfile

    folder = out / "radgraph"
    shutil.copytree(tiny_radgraph, folder)
    config = folder / "config.json"
    config.write_text(config.read_text().replace(json.dumps(bert_base)[1:-1], ENCODER_ID))
    with tarfile.open(out / "radgraph.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="radgraph")
    return out / "radgraph.tar.gz"


@pytest.fixture
def real_layouts(fake_hub, tmp_path, tiny_roberta, tiny_bert_base, tiny_chexbert, tiny_radgraph, tiny_rate_ner,
                 tiny_biolord):
    """Every model but the judge served as its real repository at its pin, stand-in contents under real names."""
    encoder = {"config.json": (tiny_bert_base / "config.json").read_bytes(),
               "vocab.txt": (tiny_bert_base / "vocab.txt").read_bytes(),
               "tokenizer_config.json": b'{"do_lower_case": true}'}  # no tokenizer.json, as the real repository
    serve(fake_hub, {"BERTSCORE": tiny_roberta, "BERT_BASE_UNCASED": tiny_bert_base, "CHEXBERT": tiny_chexbert,
                     "RADGRAPH": radgraph_archive(tiny_radgraph, str(tiny_bert_base), tmp_path / "archive"),
                     "RADGRAPH_ENCODER": encoder, "RATE_NER": tiny_rate_ner, "BIOLORD": tiny_biolord})
    return fake_hub


@pytest.mark.slow
def test_after_models_download_all_an_air_gapped_cache_scores_every_metric(real_layouts, tmp_path, monkeypatch,
                                                                             capsys):
    import shutil

    from huggingface_hub import constants

    from rexrank import demo
    from rexrank.results import Result

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # where the RadGraph archive is unpacked
    assert main(["models", "download", "--all"]) == 0
    out = capsys.readouterr().out
    assert "RADGRAPH_ENCODER: microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext@9f030fc50b23" in out
    copy = tmp_path / "air-gapped" / "hub"
    shutil.copytree(constants.HF_HUB_CACHE, copy)  # what an air-gapped machine receives
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(copy))
    monkeypatch.setenv("HF_HUB_CACHE", str(copy))
    real_layouts.set_offline()
    seen = len(real_layouts.requests)
    assert main(["score", "--predictions", str(demo.predictions("demo-careful", "findings")), "--dataset",
                 str(demo.DATASET), "--task", "findings", "--metrics", "all", "--out", str(tmp_path / "out"),
                 "--quiet"]) == 0, capsys.readouterr().err
    result = Result.read(written(tmp_path / "out", "dataset.findings.json"))
    assert set(result.metrics) == set(AVAILABLE) and result.skipped == {}  # every metric `all` names
    assert len(real_layouts.requests) == seen  # not one request left the machine


@pytest.mark.slow
def test_the_demo_fetches_the_pinned_weights_and_ranks_by_inverse_radcliq(real_layouts, tmp_path, monkeypatch,
                                                                          capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert main(["demo", "--out", str(tmp_path / "demo")]) == 0
    out = capsys.readouterr().out
    assert "not run here" not in out and out.count("ranked by 1/RadCliQ-v1") == 2
    assert real_layouts.downloads("radgraph.tar.gz") == 1 and real_layouts.downloads("vocab.txt") == 3
