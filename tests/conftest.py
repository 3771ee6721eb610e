import atexit
import base64
import os
import shutil
import tempfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# Before anything imports huggingface_hub/evaluate: a failed Hub lookup otherwise waits ~50 s.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ.setdefault("TQDM_DISABLE", "1")
os.environ["REXRANK_CACHE"] = "off"  # tests that need the feature cache point it at a temporary file
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
# datasets reads its cache folder once, at import, and defaults to ~/.cache/huggingface/datasets: a test that calls
# load_dataset without the fake_hub fixture (or use_datasets_cache) must not fill the developer's.
os.environ["HF_DATASETS_CACHE"] = tempfile.mkdtemp(prefix="rexrank-tests-datasets-")
atexit.register(shutil.rmtree, os.environ["HF_DATASETS_CACHE"], True)
# evaluate copies its modules (local metric folders and Space modules) under HF_MODULES_CACHE, read at import and put
# on sys.path: set once here, before any import, never moved mid-run.
os.environ["HF_MODULES_CACHE"] = tempfile.mkdtemp(prefix="rexrank-tests-modules-")
atexit.register(shutil.rmtree, os.environ["HF_MODULES_CACHE"], True)
# torch at one thread, here and in every process a test starts (they inherit the environment): the models in tests
# are tiny, and on a busy 2-core machine a second thread slows them (a forward 1.13 s at two threads, 0.47 s at one,
# issue 38; alone on the machine two threads were 5-15% faster on the torch-heavy test files, so a developer may set
# OMP_NUM_THREADS). Read by torch when it is imported; nothing imports it before this file.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
for _key in [k for k in os.environ if k.startswith("REXRANK_MODEL_")]:  # a developer's own copies must not leak in
    os.environ.pop(_key)
# The maintainers' ledger key of every test, as the jobs hold it (a secret) and its public half as the board is
# configured with it (docs/security.md, rule 20): the jobs sign the ledger, every reader checks it. A test of forged
# entries, another key or a rotation sets its own.
_seed = os.urandom(32)
os.environ["REXRANK_LEDGER_KEY"] = base64.b64encode(_seed).decode()
os.environ["REXRANK_LEDGER_KEYS"] = base64.b64encode(
    Ed25519PrivateKey.from_private_bytes(_seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).decode()

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from fakehub import fake_hub  # noqa: E402,F401  (a fixture: the loopback Hub)
from fakeopenai import fake_openai, remote_openai  # noqa: E402,F401  (fixtures: judges on loopback and off it)
from fixtures.board_app import app, own_app, shared_app  # noqa: E402,F401  (fixtures: the board's app, one per module)
from fixtures.browser import chromium, chromium_browser  # noqa: E402,F401  (fixtures: Chromium, one per module)
from fixtures.radrbench import radrbench_built  # noqa: E402,F401  (a fixture: the synthetic RadRBench-CXR build)

ROOT = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = ROOT.parent / "shared" / "reference"
_SPACES = tempfile.mkdtemp(prefix="rexrank-tests-spaces-")
atexit.register(shutil.rmtree, _SPACES, True)


def metric_space(name: str) -> Path:
    """metrics/<name>/ as its Space is uploaded (`rexrank.publish.metric_space`: a folder holding only its card gets
    the module, app and requirements its spec writes), staged once per process: what `evaluate.load` reads."""
    from rexrank.publish import metric_space as staged

    into = Path(_SPACES) / name
    return into if into.is_dir() else staged(ROOT / "metrics" / name, into)

# Marks that follow from what a test uses (pyproject registers them; `pytest -m "not slow"` is the developer's loop):
# a test that asks for one of these fixtures gets its marks, so the reason for a mark lives with the fixture.
IMPLIED_MARKS = {
    "chromium": ("browser", "slow"),  # Debian's Chromium through Playwright
    "reference_python": ("parity", "slow", "subprocess"),  # the reference packages, live, in their transformers-4 venv
    "oracle_model": ("parity", "slow"),  # bert-score, live, in this process (tests/scorers/test_bertscore.py)
    "stock_model": ("parity", "slow"),
    "hf_cache": ("subprocess", "slow"),  # python -m rexrank.inference.hf_runner on the vision stand-ins
    "shared_app": ("slow",),  # the leaderboard's Gradio app on loopback, driven with gradio_client
    "own_app": ("slow",),
}


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: a run without xdist has none
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker per core for the fast tier, which computes (4 workers on 2 cores: 60 s, 2 workers: 42 s);
    two more for the slow tests, which wait on subprocesses, sandboxes, loopback servers and Chromium (2 workers on 2
    cores kept 1.2 of them busy: the whole suite in 483 s, 437 s with 4; issue 38)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores if "not slow" in (config.option.markexpr or "") else cores + 2


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in getattr(item, "fixturenames", ()):
            for mark in IMPLIED_MARKS.get(name, ()):
                item.add_marker(mark)


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The project's golden data (../shared/reference), read in place, never copied into the repo."""
    if not SHARED_REFERENCE.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"golden data missing at {SHARED_REFERENCE}")
        pytest.skip(f"golden data not found at {SHARED_REFERENCE}")
    return SHARED_REFERENCE


@pytest.fixture(scope="session")
def reference_python() -> str:
    """The reference venv's Python (tests/parity/make_venv.sh): in CI its absence fails the test, elsewhere skips it."""
    from fixtures.reference_venv import PYTHON

    if not os.path.exists(PYTHON):
        if os.environ.get("CI"):
            pytest.fail(f"reference venv missing at {PYTHON}: .ci/run builds it with tests/parity/make_venv.sh",
                        pytrace=False)
        pytest.skip("no reference venv: run tests/parity/make_venv.sh")
    return PYTHON


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    from fixtures.tiny_models import build_roberta

    return build_roberta(tmp_path_factory.mktemp("distilroberta"))


@pytest.fixture(scope="session")
def tiny_bert_base(tmp_path_factory) -> Path:
    from fixtures.tiny_models import build_bert_base

    return build_bert_base(tmp_path_factory.mktemp("bert-base-uncased"))


@pytest.fixture(scope="session")
def tiny_chexbert(tmp_path_factory, tiny_bert_base) -> Path:
    from fixtures.tiny_models import build_chexbert_checkpoint

    return build_chexbert_checkpoint(tmp_path_factory.mktemp("chexbert") / "chexbert.pth", tiny_bert_base)


@pytest.fixture(scope="session")
def tiny_radgraph(tmp_path_factory, tiny_bert_base) -> Path:
    from fixtures.tiny_models import build_radgraph

    return build_radgraph(tmp_path_factory.mktemp("radgraph") / "radgraph", tiny_bert_base)


@pytest.fixture(scope="session")
def tiny_rate_ner(tmp_path_factory) -> Path:
    from fixtures.tiny_models import build_rate_ner

    return build_rate_ner(tmp_path_factory.mktemp("rate-ner"))


@pytest.fixture(scope="session")
def tiny_biolord(tmp_path_factory) -> Path:
    from fixtures.tiny_models import build_biolord

    return build_biolord(tmp_path_factory.mktemp("biolord"))


@pytest.fixture
def local_models(monkeypatch, tiny_roberta, tiny_bert_base, tiny_chexbert, tiny_radgraph, tiny_rate_ner, tiny_biolord,
                 tmp_path):
    """Every model pointed at its tiny local copy, and a fresh feature cache."""
    monkeypatch.setenv("REXRANK_MODEL_BERTSCORE", str(tiny_roberta))
    monkeypatch.setenv("REXRANK_MODEL_BERT_BASE_UNCASED", str(tiny_bert_base))
    monkeypatch.setenv("REXRANK_MODEL_CHEXBERT", str(tiny_chexbert))
    monkeypatch.setenv("REXRANK_MODEL_RADGRAPH", str(tiny_radgraph))
    monkeypatch.setenv("REXRANK_MODEL_RATE_NER", str(tiny_rate_ner))
    monkeypatch.setenv("REXRANK_MODEL_BIOLORD", str(tiny_biolord))
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "features.sqlite"))


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    from fixtures.tiny_models import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("green-radllama2"))
