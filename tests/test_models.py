"""Weight resolution against the loopback Hub, for real: download, cache, offline, pins, errors, overrides."""

import dataclasses
from pathlib import Path

import pytest

from rexrank import models
from rexrank.cli import main
from rexrank.models import MODELS, ModelUnavailable, resolve

REPO = MODELS["BERTSCORE"].repo_id


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


@pytest.fixture
def hub_with_roberta(fake_hub, tiny_roberta):
    fake_hub.add_repo(REPO, files_of(tiny_roberta) | {"tf_model.h5": b"not fetched"})
    return fake_hub


def test_first_download_then_cache_then_offline(hub_with_roberta):
    hub = hub_with_roberta
    first = resolve("BERTSCORE")
    assert first.source == "hub cache" and len(first.commit) == 40
    assert (first.path / "config.json").is_file() and not (first.path / "tf_model.h5").exists()
    assert hub.downloads("model.safetensors") == 1 and hub.downloads("tf_model.h5") == 0
    assert first.identity == f"{REPO}@{first.commit[:12]}"

    again = resolve("BERTSCORE")
    assert again.path == first.path and hub.downloads("model.safetensors") == 1  # a cache hit

    hub.set_offline()
    seen = len(hub.requests)
    assert resolve("BERTSCORE").path == first.path
    assert len(hub.requests) == seen  # offline: not a single request


def test_a_pinned_revision_keeps_its_files_when_main_moves(hub_with_roberta, tiny_roberta, monkeypatch):
    hub = hub_with_roberta
    old = resolve("BERTSCORE")
    hub.add_repo(REPO, files_of(tiny_roberta) | {"config.json": b'{"moved": true}'})
    monkeypatch.setitem(MODELS, "BERTSCORE", dataclasses.replace(MODELS["BERTSCORE"], revision=old.commit))
    pinned = resolve("BERTSCORE")
    assert pinned.commit == old.commit
    assert (pinned.path / "config.json").read_bytes() == (tiny_roberta / "config.json").read_bytes()
    monkeypatch.setitem(MODELS, "BERTSCORE", dataclasses.replace(MODELS["BERTSCORE"], revision="main"))
    assert (resolve("BERTSCORE").path / "config.json").read_bytes() == b'{"moved": true}'


def test_offline_without_a_copy_says_which_model_and_how_to_fix(fake_hub):
    fake_hub.set_offline()
    with pytest.raises(ModelUnavailable) as err:
        resolve("CHEXBERT")
    assert str(err.value) == (
        "CheXbert checkpoint (chexbert.pth): StanfordAIMI/RRG_scorers@main (chexbert.pth) is not in the Hugging "
        "Face cache (HF_HUB_OFFLINE=1). Run `rexrank models download chexbert` where there is network, or set "
        "REXRANK_MODEL_CHEXBERT=/path/to/a/local/copy (a folder or file in the reference's own format)")


def test_missing_file_missing_repo_and_missing_revision(fake_hub, monkeypatch):
    fake_hub.add_repo("StanfordAIMI/RRG_scorers", {"radgraph.tar.gz": b"x"})
    with pytest.raises(ModelUnavailable, match=r"StanfordAIMI/RRG_scorers@main \(chexbert.pth\) has none of the "
                                               r"files named"):
        resolve("CHEXBERT")
    with pytest.raises(ModelUnavailable, match=r"google-bert/bert-base-uncased not found on the Hub \(or private: "
                                               r"set HF_TOKEN\), or set REXRANK_MODEL_BERT_BASE_UNCASED="):
        resolve("BERT_BASE_UNCASED")
    monkeypatch.setitem(MODELS, "CHEXBERT", dataclasses.replace(MODELS["CHEXBERT"], revision="v9"))
    with pytest.raises(ModelUnavailable, match="revision v9 of StanfordAIMI/RRG_scorers does not exist"):
        resolve("CHEXBERT")


def test_gated_repo_401_and_403(fake_hub, monkeypatch):
    fake_hub.add_repo("StanfordAIMI/RRG_scorers", {"chexbert.pth": b"weights"}, gated=True)
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


def test_models_cli_download_then_list(hub_with_roberta, fake_hub, capsys):
    assert main(["models", "download", "bertscore"]) == 0
    assert "BERTSCORE: distilbert/distilroberta-base@" in capsys.readouterr().out
    fake_hub.set_offline()
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith("BERTSCORE"))
    assert "hub cache" in line and "distilbert/distilroberta-base@" in line
    assert "CHEXBERT" in out and "not available: " in out
    assert main(["models", "download", "--all"]) == 3  # offline: the others cannot be fetched
    out = capsys.readouterr().out
    assert "CHEXBERT: not available" in out and "RATE_NER: not available" in out
    assert "GREEN" not in out  # a 13.5 GB judge is fetched only when named
