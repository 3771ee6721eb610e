import os

# Before anything imports huggingface_hub/evaluate: a failed Hub lookup otherwise waits ~50 s.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ.setdefault("TQDM_DISABLE", "1")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from fakehub import fake_hub  # noqa: E402,F401  (a fixture: the loopback Hub)

ROOT = Path(__file__).resolve().parents[1]
SHARED_REFERENCE = ROOT.parent / "shared" / "reference"


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The project's golden data (../shared/reference), read in place, never copied into the repo."""
    if not SHARED_REFERENCE.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"golden data missing at {SHARED_REFERENCE}")
        pytest.skip(f"golden data not found at {SHARED_REFERENCE}")
    return SHARED_REFERENCE
