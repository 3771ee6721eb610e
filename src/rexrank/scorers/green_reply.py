"""Reading GREEN's answers as Stanford-AIMI/GREEN at d72c1951 reads them (`clean_responses`, `parse_error_counts`,
`compute_green`): the clean-up, the parser and the score; `rexrank.scorers.green`'s docstring says what each does and
where rexrank reads an answer the reference would score as 0 as unparseable instead."""

from __future__ import annotations

import re
from dataclasses import dataclass

SUBCATEGORIES = {  # the reference's names of the error kinds (a)-(f)
    "a": "False report of a finding in the candidate",
    "b": "Missing a finding present in the reference",
    "c": "Misidentification of a finding's anatomic location/position",
    "d": "Misassessment of the severity of a finding",
    "e": "Mentioning a comparison that isn't in the reference",
    "f": "Omitting a comparison detailing a change from a prior study",
}
SIGNIFICANT = "Clinically Significant Errors"
INSIGNIFICANT = "Clinically Insignificant Errors"
MATCHED = "Matched Findings"
COUNT_KEYS = (*(f"significant_{k}" for k in SUBCATEGORIES), *(f"insignificant_{k}" for k in SUBCATEGORIES), "matched")

_LETTERED = re.compile(r"\([a-f]\) .*")  # no DOTALL: a line's rest
_NUMBERED = re.compile(r"\([1-6]\) .*")
_LINE_COUNT = re.compile(r"(?<=: )\b\d+\b(?=\.)")
_LEADING_COUNT = re.compile(r"\b\d+\b(?=\.)")  # matched from the section's first character only


# transformers 4's `clean_up_tokenization`, which the reference's decode applied (`clean_up_tokenization_spaces =
# True`); transformers 5 skips it for BPE tokenizers, and chat servers do not apply it.
_DECODE_CLEANUP = ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"), (" 'm", "'m"),
                   (" 's", "'s"), (" 've", "'ve"), (" 're", "'re"))


def clean_completion(text: str) -> str:
    """A raw answer as the reference hands it to its parser: its decode's space clean-up, then `clean_responses`.
    The reference cleans prompt plus answer; the prompt part always holds "[Explanation]:" and ends at the last
    "<|assistant|>", so cleaning the answer alone gives the same text. Its test `("a" or "b") in text` is
    `"a" in text`."""
    for old, new in _DECODE_CLEANUP:
        text = text.replace(old, new)
    text = text.split("<|assistant|>")[-1]
    if "[Explanation]:\n    <Explanation>\n" in text:  # the template echoed: between the first and second one
        text = text.split("[Explanation]:")[1]
    else:
        text = text.split("[Explanation]:")[-1]
    return text.replace("</s>", "").replace("<unk>", "")


@dataclass(frozen=True)
class Parsed:
    significant: tuple[int, ...]  # (a)..(f)
    insignificant: tuple[int, ...]
    matched: int

    def counts(self) -> dict[str, int]:
        return dict(zip(COUNT_KEYS, (*self.significant, *self.insignificant, self.matched)))


def _section(text: str, name: str) -> str | None:
    found = re.search(rf"\[{re.escape(name)}\]:\s*(.*?)(?:\n\s*\n|\Z)", text, re.DOTALL)
    return None if found is None else found.group(1)


def _error_counts(section: str) -> tuple[int, ...] | None:
    """Counts (a)..(f) of an error section; None when it has neither "No" nor any lettered or numbered line."""
    if section.startswith("No"):
        return (0,) * 6
    lines, labels = sorted(_LETTERED.findall(section)), [f"({k}) " for k in SUBCATEGORIES]
    if not lines:
        lines, labels = sorted(_NUMBERED.findall(section)), [f"({i}) " for i in range(1, 7)]
    if not lines:
        return None
    counts = [0] * 6
    for position, label in enumerate(labels):
        for line in lines:  # in sorted order: a later line of the same label with a count wins, as in the reference
            if line.startswith(label) and (count := _LINE_COUNT.search(line)):
                counts[position] = int(count.group())
    return tuple(counts)


def parse(completion: str) -> Parsed | None:
    """The counts in a cleaned answer, or None when the score cannot be read from it (see the module docstring)."""
    significant_text, matched_text = _section(completion, SIGNIFICANT), _section(completion, MATCHED)
    if significant_text is None or matched_text is None:
        return None
    significant = _error_counts(significant_text)
    if matched_text.startswith("No"):
        matched = 0
    elif count := _LEADING_COUNT.match(matched_text):
        matched = int(count.group())
    else:
        return None
    if significant is None:
        return None
    insignificant_text = _section(completion, INSIGNIFICANT)  # not in the score: the reference's zeros when absent
    insignificant = (_error_counts(insignificant_text) if insignificant_text is not None else None) or (0,) * 6
    return Parsed(significant, insignificant, matched)


def score(parsed: Parsed) -> float:
    if parsed.matched == 0:
        return 0.0
    return parsed.matched / (parsed.matched + sum(parsed.significant))
