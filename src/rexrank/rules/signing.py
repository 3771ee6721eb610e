"""The ledger's signatures (docs/security.md, rule 20): every entry under `ledger/` is signed, Ed25519, by the
maintainers' jobs, and counts only when its signature verifies under a public key the board is configured with.

`ledger/` lives on the results repo's `main`, which the Hub's merge button writes: a pull request the review refuses,
merged anyway, could add any record (a result's hash, an imported row, a review). Who committed a file says nothing
(the button's commit is a maintainer's), so the ledger's word is its signature: made with a private key that only
the maintainers' Hub-talking job processes hold (`REXRANK_LEDGER_KEY`, an HF Jobs and webhook Space secret; no
sandbox ever gets a variable of the job's), checked by every reader with the public keys of `REXRANK_LEDGER_KEYS`
(a Space or job variable, never a file of the repo: a pull request could add its own).

What is signed is the entry's canonical bytes: its path in the repo (a record copied to another path, another
submission's or another kind's, does not verify) and every field of the record but the signature, as sorted, compact,
ASCII JSON after a domain tag. The signature names its key by id (the first 16 hex digits of the public key's
sha256), so keys rotate: list the new and the old public keys, sign with the new one, re-sign what the old one signed
(`python -m rexrank.backend sign-ledger`), then drop the old one.

`cryptography` is imported only when an entry is signed or checked: a repo with no ledger (the shipped official
figures) needs none.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re

from rexrank.errors import InputError

KEY_ENV = "REXRANK_LEDGER_KEY"  # the private key (a secret): base64 of the 32-byte Ed25519 seed
KEYS_ENV = "REXRANK_LEDGER_KEYS"  # the public keys trusted (a variable): base64 of each 32-byte key, space or comma
FIELD = "signature"  # {"key": key id, "ed25519": base64 of the signature}
TAG = b"rexrank-ledger-entry-v1\n"
MIGRATE = "python -m rexrank.backend sign-ledger --hub ORG/NAME"
_ID = re.compile(r"^[0-9a-f]{16}$")


def _raw(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise InputError(f"{what}: expected the base64 of 32 bytes (python -m rexrank.backend ledger-key makes one)")
    return raw


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:16]


def _private(seed: bytes):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(seed)


def _public_raw(key) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


class SigningKey:
    """A private key and its public key's id."""

    def __init__(self, seed: bytes):
        self._key = _private(seed)
        self.public = _public_raw(self._key.public_key())
        self.id = key_id(self.public)

    def __repr__(self) -> str:  # never the seed, in a log or a traceback
        return f"SigningKey({self.id})"

    def sign(self, path: str, record: dict) -> dict:
        """`record` (as `path` in the repo holds it) with its signature."""
        signature = self._key.sign(message(path, record))
        return {**_unsigned(record), FIELD: {"key": self.id, "ed25519": base64.b64encode(signature).decode()}}

    def public_text(self) -> str:
        return base64.b64encode(self.public).decode()


def generate() -> tuple[str, SigningKey]:
    """A new key: (the private key's text, to keep as the secret, and the key)."""
    seed = os.urandom(32)
    return base64.b64encode(seed).decode(), SigningKey(seed)


def signing_key(text: str | None = None) -> SigningKey:
    """The maintainers' key from `text` or `REXRANK_LEDGER_KEY`; InputError when there is none or it is not one."""
    text = os.environ.get(KEY_ENV, "") if text is None else text
    if not text.strip():
        raise InputError(f"{KEY_ENV} is not set: the maintainers' jobs sign the ledger's entries with it (a secret "
                         "of the job; docs/submitting.md, the maintainers' setup)")
    return SigningKey(_raw(text, KEY_ENV))


def public_keys(text: str | None = None, own: bool = True) -> dict[str, bytes]:
    """key id -> public key trusted: those of `text` or `REXRANK_LEDGER_KEYS`, and (with `own`) the public half of
    `REXRANK_LEDGER_KEY` where the process holds it (a job trusts what it signs itself)."""
    text = os.environ.get(KEYS_ENV, "") if text is None else text
    keys = {key_id(raw): raw for raw in (_raw(part, KEYS_ENV) for part in re.split(r"[\s,]+", text) if part)}
    if own and os.environ.get(KEY_ENV, "").strip():
        mine = signing_key()
        keys[mine.id] = mine.public
    return keys


def _unsigned(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != FIELD}


def message(path: str, record: dict) -> bytes:
    """The bytes a signature covers: the entry's path and its record but the signature, canonical JSON."""
    try:
        body = json.dumps({"path": path, "record": _unsigned(record)}, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InputError(f"{path}: not a ledger record ({err})") from None
    return TAG + body.encode()


def problem(path: str, record: dict, keys: dict[str, bytes]) -> str | None:
    """None when `record`, found at `path`, is signed by one of `keys`; else why it does not count."""
    signed = record.get(FIELD)
    if signed is None:
        return f"unsigned (a ledger made before entries were signed: a maintainer checks it and runs {MIGRATE})"
    if not isinstance(signed, dict) or not isinstance(signed.get("key"), str) or not _ID.match(signed["key"]) \
            or not isinstance(signed.get("ed25519"), str):
        return "its signature is not one the maintainers' jobs write"
    if not keys:
        return f"no public key is configured to check it ({KEYS_ENV})"
    if signed["key"] not in keys:
        return f"signed by key {signed['key']}, not one of the maintainers' ({KEYS_ENV})"
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        signature = base64.b64decode(signed["ed25519"], validate=True)
        Ed25519PublicKey.from_public_bytes(keys[signed["key"]]).verify(signature, message(path, record))
    except (InvalidSignature, binascii.Error, ValueError, InputError):
        return f"its signature does not verify under key {signed['key']} (changed after it was signed, or forged)"
    return None
