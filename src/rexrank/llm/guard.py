"""The data-use guard: report text goes to a judge endpoint that is not on this machine only when the data is known
to be public, or when the user allowed that endpoint.

PhysioNet's credentialed data use agreement (MIMIC-CXR) forbids sharing the data with third parties, public LLM
APIs included; the other private sets carry agreements of the same kind. So the guard denies by default: a loopback
endpoint (every address its host resolves to is a loopback address: a local vLLM) always passes; any other needs
either data known to be public (`DataUse.public`, decided by what the data is: `rexrank.data.identity`), or
`--allow-endpoint URL`, the user's statement that their agreement covers that endpoint. A dataset's name alone never
makes it public (a file called `iu_xray.json` may hold MIMIC-CXR reports), but a name that says credentialed data is
believed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from rexrank.catalog import OTHER_CREDENTIALED, TEST_SETS
from rexrank.errors import InputError

# Report text of these datasets is under a data use agreement; matched on the name or Hub id with case and
# punctuation ignored ("MIMIC_CXR", "rexrank/mimic-cxr-test", "byrLLCC/RadRBench-CXR", ReXrank's "gradienthealth").
CREDENTIALED_DATASETS = {key: t.title for t in TEST_SETS.values() if t.credentialed
                         for key in (t.name, t.official_key) if key} | OTHER_CREDENTIALED


@dataclass(frozen=True)
class DataUse:
    """What a set of report texts is, for the guard: a label for messages, whether it is known to be public, and
    how that was decided."""

    label: str
    public: bool
    why: str


def _norm_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def credentialed(dataset: str | None) -> str | None:
    """The credentialed dataset that `dataset` (a name or Hub id) refers to, or None."""
    key = _norm_name(dataset or "")
    return next((label for name, label in CREDENTIALED_DATASETS.items() if key and _norm_name(name) in key), None)


def describe(dataset: DataUse | str | None) -> DataUse:
    """`dataset` as the guard sees it: a DataUse as it is; a name is credentialed when it names such a set, else of
    unknown origin, never public."""
    if isinstance(dataset, DataUse):
        return dataset
    if (label := credentialed(dataset)) is not None:
        return DataUse(label, False, f"named {dataset!r}")
    shown = f"dataset {dataset!r}" if dataset else "text of unknown origin"
    return DataUse(shown, False, "not known to be public (rexrank knows a set by its build metadata or its study ids)")


def is_loopback(url: str) -> bool:
    """Whether every address `url`'s host resolves to is a loopback address (a host that does not resolve is not)."""
    host = urlsplit(url).hostname or ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return False
    try:
        return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)
    except ValueError:
        return False


def _norm_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def check_data_use(dataset: DataUse | str | None, base_url: str, allow_endpoints: Iterable[str] = ()) -> None:
    """Refuse to send text that is not known to be public to an endpoint that is neither loopback nor allowed."""
    use = describe(dataset)
    if use.public or _norm_url(base_url) in {_norm_url(u) for u in allow_endpoints} or is_loopback(base_url):
        return
    if credentialed(use.label):
        raise InputError(
            f"refusing to send {use.label} reports ({use.why}) to the judge endpoint {base_url}: {use.label} is "
            "credentialed data, and its data use agreement (for MIMIC, PhysioNet's credentialed DUA) forbids "
            "sending its text to third-party online services such as public LLM APIs. To proceed, host the judge "
            "model locally (e.g. vLLM on localhost), or pass --allow-endpoint URL for an endpoint your agreement "
            "covers (e.g. Azure OpenAI with human review of prompts opted out).")
    raise InputError(
        f"refusing to send {use.label} to the judge endpoint {base_url}: it is {use.why}, and report text goes to an "
        "endpoint off this machine only when it is known to be public. Host the judge locally (e.g. vLLM on "
        "localhost), or pass --allow-endpoint URL if you may send this text there.")
