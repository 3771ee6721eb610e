"""Reading FineRadScore's judge: a reply is a JSON object of corrections, one per line id (or "None" for an inserted
line), each with its clinical severity; anything else is a `ReplyError` whose message the repair turn quotes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

# The reference's four labels (PROMPT above, ReFiSco's scale); "No error" is ReFiSco's fifth, for a line left as is.
SEVERITIES = {"Emergent error": 4, "Urgent error": 3, "Actionable nonurgent error": 2, "Not actionable": 1}
NO_ERROR = "No error"
FIELDS = ("corrections", "clinical severity", "comments", "error category")  # each entry must have them all
INSERTED = "None"  # the key of a line the judge adds
_FENCE = re.compile(r"```[A-Za-z]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_LINE_ID = re.compile(r"[0-9]+")
_LABELS = {NO_ERROR.lower(): 0, **{label.lower(): value for label, value in SEVERITIES.items()},
           **{label.lower().removesuffix(" error"): value for label, value in SEVERITIES.items()}}


class ReplyError(ValueError):
    """A reply that cannot be read; the message is what the repair turn quotes."""


@dataclass(frozen=True)
class Correction:
    line: int | None  # the candidate line corrected; None: a line the judge inserts
    severity: int  # 1..4, 0 for "No error"
    correction: str  # the corrected line, "[delete]", or the inserted line
    comments: str = ""
    categories: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"line": self.line, "severity": self.severity, "correction": self.correction,
                "comments": self.comments, "categories": list(self.categories)}


def read_severity(value: object) -> int:
    """A label's severity: the four labels with or without " error", or "No error" (0), any case."""
    key = " ".join(value.lower().replace("non-urgent", "nonurgent").split()) if isinstance(value, str) else None
    if key not in _LABELS:
        raise ReplyError(f"clinical severity {json.dumps(value)} is not one of "
                         + ", ".join(json.dumps(label) for label in SEVERITIES))
    return _LABELS[key]


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def parse(reply: str, lines: int) -> list[Correction]:
    """The corrections in a reply to a candidate of `lines` lines; ReplyError when it cannot be read."""
    body = reply.strip()
    if fenced := _FENCE.fullmatch(body):
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except json.JSONDecodeError as err:
        raise ReplyError(f"it is not JSON ({err})") from None
    if not isinstance(data, dict):
        raise ReplyError(f"it is a JSON {type(data).__name__}, not an object")
    corrections = []
    for key, entry in data.items():
        if key == INSERTED:
            line = None
        elif _LINE_ID.fullmatch(key):
            line = int(key)
            if line >= lines:
                raise ReplyError(f"key \"{key}\" is not a line id: the report has lines 0 to {lines - 1}"
                                 if lines else f"key \"{key}\" is not a line id: the report has no lines")
        else:
            raise ReplyError(f"key {json.dumps(key)} is neither a line id nor \"None\"")
        if not isinstance(entry, dict) or any(name not in entry for name in FIELDS):
            raise ReplyError(f"the value of \"{key}\" must be an object with the keys "
                             + ", ".join(f'"{name}"' for name in FIELDS))
        try:
            severity = read_severity(entry["clinical severity"])
        except ReplyError as err:
            raise ReplyError(f"line \"{key}\": {err}") from None
        categories = entry["error category"]
        corrections.append(Correction(line, severity, _text(entry["corrections"]), _text(entry["comments"]),
                                      tuple(map(_text, categories if isinstance(categories, list) else [categories]))))
    return corrections
