"""The ledger's keys, for the maintainers (docs/security.md, rule 20; docs/submitting.md, the maintainers' setup).

- `python -m rexrank.backend ledger-key --out FILE` makes a key: the private key into FILE (mode 0600, never over an
  existing file), to become the `REXRANK_LEDGER_KEY` secret of the jobs; its public key printed, for
  `REXRANK_LEDGER_KEYS`.
- `python -m rexrank.backend sign-ledger --hub ORG/NAME` signs, with the key of `REXRANK_LEDGER_KEY`, every entry on
  main that a listed key does not already sign as it: an unsigned entry (a ledger made before entries were signed:
  the migration; `--list` first, and remove any entry a merged pull request wrote, since signing it vouches for it),
  and an entry signed by another listed key (a rotation: afterwards the old key can be dropped from the list). An
  entry whose signature does not verify is never signed again: it is named, to be removed or restored.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from rexrank.errors import InputError
from rexrank.rules import ledger, signing


def new_key(out: Path) -> signing.SigningKey:
    """A new key, its private half written to `out` (readable by its owner only); the key."""
    text, key = signing.generate()
    try:
        handle = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError(f"{out}: already exists; a key is never written over another") from None
    with os.fdopen(handle, "w") as written:
        written.write(text + "\n")
    return key


def _summary(record: dict) -> str:
    """What an entry vouches for, in a few words, for the maintainer who decides whether to sign it."""
    said = [f"{k} {str(record[k])[:80]}" for k in ("owner", "path", "submission", "task", "by", "at") if k in record]
    results = record.get("results")
    if isinstance(results, dict):
        said.append("results " + ", ".join(f"{key} ({entry.get('job')}, #{entry.get('pr')})" for key, entry in
                                           list(results.items())[:6] if isinstance(entry, dict)))
    return "; ".join(said)


def _entry(name: str, path: Path, key: signing.SigningKey, keys: dict[str, bytes], done: bool
           ) -> tuple[str, dict | None]:
    """(what is done with the entry at repo path `name`, or would be unless `done`; its signed record, or None when it
    is left as it is)."""
    signs, resigns = ("signed", "re-signed") if done else ("to be signed", "to be re-signed")
    try:
        if path.is_symlink() or path.stat().st_size > ledger.MAX_RECORD_BYTES:
            raise ValueError("too large or a symlink")
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError, RecursionError) as err:
        return f"left as it is: unreadable ({type(err).__name__}); remove it", None
    signed = record.get(signing.FIELD)
    if signed is None:
        return f"unsigned, {signs} ({_summary(record)})", key.sign(name, record)
    if why := signing.problem(name, record, keys):
        return f"left as it is: {why}; remove it, or restore the entry the jobs wrote", None
    if signed["key"] != key.id:
        return f"signed by key {signed['key']}, {resigns} with key {key.id}", key.sign(name, record)
    return "", None


def sign_ledger(repo_id: str, list_only: bool = False, token: str | None = None) -> tuple[list[str], str | None]:
    """Sign the ledger on main (see the module's docstring): a line per entry not already signed by the key, and the
    commit's URL (None when nothing was committed)."""
    from huggingface_hub import CommitOperationAdd, HfApi, snapshot_download

    key, keys = signing.signing_key(), signing.public_keys()
    api = HfApi(token=token)
    head = api.repo_info(repo_id, repo_type="dataset").sha
    lines, operations = [], []
    with tempfile.TemporaryDirectory(prefix="rexrank-sign-") as tmp:
        snapshot_download(repo_id, repo_type="dataset", revision=head, local_dir=tmp, token=api.token,
                          allow_patterns=[f"{ledger.LEDGER}/**"])
        for path in sorted((Path(tmp) / ledger.LEDGER).rglob("*.json")):
            name = path.relative_to(tmp).as_posix()
            said, record = _entry(name, path, key, keys, not list_only)
            if said:
                lines.append(f"{name}: {said}")
            if record is not None:
                data = (json.dumps(record, indent=1, sort_keys=True) + "\n").encode()
                operations.append(CommitOperationAdd(name, data))
    if list_only or not operations:
        return lines, None
    commit = api.create_commit(repo_id, operations, repo_type="dataset", parent_commit=head,
                               commit_message=f"Ledger: {len(operations)} entries signed with key {key.id}")
    return lines, commit.commit_url
