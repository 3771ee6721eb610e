"""Without a reachable Hub, `rexrank submit` and `rexrank infer --fetch` answer as `rexrank models download` does: one
line naming what was not sent or fetched, exit 2, at once when the Hub's name does not resolve (no retries)."""

import json
import socket

import pytest
from fixtures.submissions import score

from rexrank.cli import main
from rexrank.models import unreachable_hub

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def hub_at(fake_hub, monkeypatch):
    """Point huggingface_hub at `endpoint` (a token set, online), as a researcher's machine without network would."""
    from huggingface_hub import constants

    monkeypatch.setenv("HF_TOKEN", "hf_researcher")
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", lambda seconds: None)  # its retries' waits

    def point(endpoint: str) -> None:
        monkeypatch.setattr(constants, "ENDPOINT", endpoint)
        unreachable_hub.cache_clear()

    yield point
    unreachable_hub.cache_clear()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once closed: connection refused


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err.strip()


def test_submit_without_a_hub_is_one_line_and_sends_nothing(tmp_path, hub_at, capsys):
    results = score(tmp_path / "results")
    args = ["submit", "--results", str(results), "--name", "Careful", "--repo", "rexrank/results"]
    hub_at("https://hub.invalid")  # a name that never resolves (RFC 6761), as with no network at all
    capsys.readouterr()
    assert main(args) == 2
    assert one_line(capsys) == ("rexrank: error: rexrank/results: the Hub (hub.invalid) cannot be reached from here "
                                "(its name does not resolve): nothing was sent; submit again where there is network "
                                "(--dry-run checks all offline)")
    port = closed_port()
    hub_at(f"http://127.0.0.1:{port}")  # the name resolves, the connection is refused
    assert main(args) == 2
    said = one_line(capsys)
    assert said.startswith("rexrank: error: rexrank/results: the Hub could not be reached (ConnectError")
    assert said.endswith("not submitted (nothing left open); run the same command again")


def test_infer_fetch_without_a_hub_is_one_line(tmp_path, hub_at, capsys):
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.yaml").write_text(json.dumps({"weights": [{"repo": "lab/toy", "revision": COMMIT}],
                                                  "tasks": ["findings"], "images": "multi", "gpu_memory_gb": 8}))
    (model / "inference.py").write_text("import argparse\nparser = argparse.ArgumentParser()\n"
                                        "parser.add_argument('--input_json_file')\n")
    (model / "requirements.txt").write_text("")
    args = ["infer", "--submission", str(model), "--dataset", str(tmp_path / "split.json"), "--image-root",
            str(tmp_path), "--out", str(tmp_path / "preds.jsonl"), "--fetch"]
    hub_at("https://hub.invalid")
    assert main(args) == 2
    assert one_line(capsys) == ("rexrank: error: --fetch: the Hub (hub.invalid) cannot be reached from here (its name "
                                "does not resolve): lab/toy@0123456789ab not downloaded; fetch where there is network, "
                                "or run without --fetch if they are in the cache (--weights-cache)")
    hub_at(f"http://127.0.0.1:{closed_port()}")
    assert main(args) == 2
    said = one_line(capsys)
    assert said.startswith("rexrank: error: --fetch: the Hub could not be reached (")
    assert said.endswith("lab/toy@0123456789ab not downloaded")
