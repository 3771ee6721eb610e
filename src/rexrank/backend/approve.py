"""`python -m rexrank.backend approve`: a maintainer vouches for one file on main, by its content.

- `imported/<name>.json` that rexrank does not ship (a newer official table, say): recorded in `ledger/imported/`, it
  is shown and ranked as long as its bytes are the recorded ones (docs/security.md, rule 21).
- `submissions/<id>/results/<dataset>.<task>.json` whose judged value the board withholds (verdicts the deterministic
  metrics contradict, or none checked): the contradicted studies are listed by id (never their text: a private set's
  references stay private), and once recorded in `ledger/reviews/`, the value is shown for exactly these bytes
  (rule 22). A result the review job or a push changes afterwards is withheld again.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from rexrank import contradictions, per_study
from rexrank.errors import InputError
from rexrank.files import file_sha256
from rexrank.results import Result, ResultError
from rexrank.rules import ledger
from rexrank.rules.layout import MAX_BYTES


def _download(api, repo_id: str, path: str, head: str, folder: str) -> Path:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        return Path(hf_hub_download(repo_id, path, repo_type="dataset", revision=head, token=api.token,
                                    local_dir=folder))
    except EntryNotFoundError:
        raise InputError(f"{repo_id}: no {path} on main") from None


def contradicted(api, repo_id: str, head: str, path: str, result: Result, folder: str) -> dict[str, list[str]]:
    """metric -> the ids of its contradicted studies, from the per-study table the result names by its hash (none
    listed where the repo holds no table: a private set's)."""
    held = contradictions.withheld(result)
    if not held:
        raise InputError(f"{path}: no judged value is withheld (no contradicted or unchecked verdict): nothing to "
                         "review")
    submission, key = path.split("/")[1], path.rsplit("/", 1)[-1].removesuffix(".json")
    name = f"submissions/{submission}/per_study/{key}.parquet"
    files = set(api.list_repo_files(repo_id, repo_type="dataset", revision=head))
    if name not in files:
        return {metric: [] for metric in held}
    table = _download(api, repo_id, name, head, folder)
    if table.stat().st_size > MAX_BYTES["per_study"] or \
            result.companions.get("per_study.parquet") != file_sha256(table):
        raise InputError(f"{name}: not the per-study table {path} names by its sha256")
    frame, _ = per_study.read(table)
    return {metric: contradictions.studies(frame, metric) for metric in held}


def approve(repo_id: str, path: str, by: str, note: str = "", list_only: bool = False, token: str | None = None
            ) -> tuple[dict[str, list[str]], dict | None]:
    """List what `path` (on main) asks the maintainers to review and, unless `list_only`, record `by`'s approval of
    its bytes in the ledger. Returns (metric -> contradicted study ids, the record or None)."""
    from huggingface_hub import HfApi

    ledger.approval_path(path)  # only the two kinds: refused before anything is read
    if not by.strip():
        raise InputError("--by: name the maintainer who approves")
    api = HfApi(token=token)
    head = api.repo_info(repo_id, repo_type="dataset").sha
    with tempfile.TemporaryDirectory(prefix="rexrank-approve-") as tmp:
        local = _download(api, repo_id, path, head, tmp)
        if local.stat().st_size > MAX_BYTES["results"]:
            raise InputError(f"{path}: {local.stat().st_size:,} bytes, more than a result may be")
        data, found, more = local.read_bytes(), {}, {}
        if path.startswith("submissions/"):
            try:
                result = Result.read(local)
            except (ResultError, UnicodeDecodeError) as err:
                raise InputError(f"{path}: {err}") from None
            found = contradicted(api, repo_id, head, path, result, tmp)
            more = {"withheld": contradictions.withheld(result),
                    "contradicted": {metric: len(ids) for metric, ids in found.items()}}
    if list_only:
        return found, None
    record = ledger.approval(path, data, by.strip(), note, head=head, **more)
    ledger.record_approval(api, repo_id, path, record)
    return found, record
