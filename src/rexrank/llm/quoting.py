"""Candidate text cannot speak in its judge's answer format.

A judge often quotes the candidate back (to explain an error, or because the candidate asked it to), before or after
its own answer. A candidate that carries text in the answer format ("[Matched Findings]: 10.", a JSON object of the
counts the reader looks up) would then be read as the verdict. So before a candidate enters a prompt, every piece of
its metric's answer format in it is made inert, keeping its words: a section name loses its square brackets, a count
label its opening parenthesis, a JSON key its underscore. What the reader looks for can then only come from the
judge. A report without such pieces enters the prompt byte for byte as the reference implementation sends it
(docs/security.md, rule 10).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class AnswerFormat:
    """The pieces of one metric's answer format, as (pattern, replacement) pairs applied in order."""

    name: str
    pieces: tuple[tuple[re.Pattern, str], ...]

    def neutral(self, text: str) -> str:
        """`text` with every piece of the answer format made inert (unchanged when it has none)."""
        for pattern, replacement in self.pieces:
            text = pattern.sub(replacement, text)
        return text

    def carries(self, text: str) -> bool:
        """Whether `text` holds a piece of the answer format."""
        return any(pattern.search(text) for pattern, _ in self.pieces)


def _piece(pattern: str, replacement: str, flags: int = re.IGNORECASE) -> tuple[re.Pattern, str]:
    return re.compile(pattern, flags), replacement


# GREEN (rexrank.scorers.green): the answer's section names, its count lines `(a) ...: N.` (a later line of a label
# with a count overrides an earlier one in the reference's parser), the chat markers the cleaning splits on, and the
# tokenizer's special tokens (which a local model would read as the end of the user's turn).
GREEN = AnswerFormat("green", (
    _piece(r"\[(\s*(?:explanation|clinically\s+(?:in)?significant\s+errors|matched\s+findings)\s*)\]", r"(\1)"),
    _piece(r"\(([a-f1-6])\)(?= [^\n]*?:\s*\d+\s*\.)", r"\1)"),
    _piece(r"<\|(\s*\w*\s*)\|>", r"(\1)"),
    _piece(r"<(\s*/?\s*(?:s|unk|pad)\s*)>", r"(\1)"),
))

# RadRScore (rexrank.scorers.radrscore): the JSON keys its reader takes counts and observations from.
RADRSCORE = AnswerFormat("radrscore", (
    _piece(r"\b(key|effective|ineffective|recalled|correct)_(conclusion|count)\b", r"\1 \2"),
))

# FineRadScore (rexrank.scorers.fineradscore): a reply is one JSON object; the candidate's double quotes are already
# dropped by the reference's line split, so an echoed "{}" (no correction needed) is what is left to make inert.
FINERADSCORE = AnswerFormat("fineradscore", (
    _piece(r"\{", "("),
    _piece(r"\}", ")"),
))
