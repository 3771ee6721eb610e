"""The data-use guard: report text of credentialed datasets never goes to an endpoint the user did not allow.

PhysioNet's credentialed data use agreement (MIMIC-CXR) forbids sharing the data with third parties, public LLM
APIs included; the other private sets carry agreements of the same kind. Loopback endpoints (a local vLLM) are
allowed; any other needs `--allow-endpoint URL`, the user's statement that their agreement covers it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from rexrank.errors import InputError

# Report text of these datasets is under a data use agreement; matched on the name or Hub id with case and
# punctuation ignored ("MIMIC_CXR", "rexrank/mimic-cxr-test", "byrLLCC/RadRBench-CXR", ReXrank's "gradienthealth").
CREDENTIALED_DATASETS = {"mimic-cxr": "MIMIC-CXR", "chexpert-plus": "CheXpert Plus", "rexgradient": "ReXGradient",
                         "gradienthealth": "ReXGradient", "radrbench-cxr": "RadRBench-CXR"}


def _norm_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def credentialed(dataset: str | None) -> str | None:
    """The credentialed dataset that `dataset` (a name or Hub id) refers to, or None."""
    key = _norm_name(dataset or "")
    return next((label for name, label in CREDENTIALED_DATASETS.items() if key and _norm_name(name) in key), None)


def is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _norm_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def check_data_use(dataset: str | None, base_url: str, allow_endpoints: Iterable[str] = ()) -> None:
    """Refuse to send a credentialed dataset to an endpoint that is neither loopback nor explicitly allowed."""
    label = credentialed(dataset)
    if label is None or is_loopback(base_url) or _norm_url(base_url) in {_norm_url(u) for u in allow_endpoints}:
        return
    raise InputError(
        f"refusing to send {label} reports (dataset {dataset!r}) to the judge endpoint {base_url}: {label} is "
        "credentialed data, and its data use agreement (for MIMIC, PhysioNet's credentialed DUA) forbids sending "
        "its text to third-party online services such as public LLM APIs. To proceed, host the judge model "
        "locally (e.g. vLLM on localhost), or pass --allow-endpoint URL for an endpoint your agreement covers "
        "(e.g. Azure OpenAI with human review of prompts opted out).")
