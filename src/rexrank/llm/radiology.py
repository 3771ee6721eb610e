"""Whether a candidate is radiology as its readers write it: the second layer of the judges' defence (docs/security.md,
rule 19).

A judge may obey text in the candidate. The first layer tells it not to (`rexrank.llm.quoting.QUOTED`); this one
keeps from it what no report or reasoning answer on this board is made of, whatever the language or the spelling:
a candidate with such a sentence is never sent, and its study counts the metric's worst value with the sentence as
its reason. It looks at structure, never at what a sentence asks:

- words read against a vocabulary (`resources/vocabulary/`: every word of the public IU-Xray reports and of an
  English dictionary, made by benchmarks/radiology_vocabulary.py) and the reference's own words; a word one typing
  slip away from a known word of six letters or more is known (reports have typos);
- a sentence is not radiology when at least half of its words, and three or more, are outside it, or when eight
  words in a row hold five outside it (a sentence without stops cannot dilute its words with radiology);
- a token that mixes digits into letters other than a measurement or a level ("3cm", "2nd", "T12") is outside, and
  counts as one word per six characters (base64 is one long token);
- a word cut by hyphens into pieces that are not words ("ig-nore") is outside: it is a word only when joined;
- letters of a script the vocabulary and the reference do not write (two or more in a word, or one inside a Latin
  word: look-alike letters) and five or more single letters in a row, spaced, hyphenated or dotted (a word spelled
  out; a comma makes a list, "A, B, C, D") are not radiology at all.

Other languages, leetspeak, base64, words cut by hyphens or spaces and look-alike letters all land outside. What
lands inside is English: an instruction written in plain English words is the first layer's to hold, and a claim
written as radiology ("all findings concordant") the third's (the maintainers' review of contradicted verdicts).
"""

from __future__ import annotations

import functools
import gzip
import re
import string
import unicodedata
from pathlib import Path

from rexrank.llm.quoting import normalised

WORDS_FILE = Path(__file__).resolve().parents[1] / "resources" / "vocabulary" / "words.txt.gz"
SHARE, LEAST = 0.5, 3  # a sentence with at least this share of its words outside, and at least this many
WINDOW, CROWD = 8, 5  # any WINDOW words in a row with CROWD outside
SPELLED = 5  # single letters in a row, spaced, hyphenated or dotted (a comma makes a list: "A, B, C, D")
TYPO_FROM = 6  # letters from which a word one edit from a known word is known

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_HYPHENATED = re.compile(r"[^\W_]+(?:-[^\W_]+)+")
CODE_LETTERS = 6  # an outside token with digits counts one word per this many characters
_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n\s*|</?[A-Za-z_]+>")
_SPELLED = re.compile(rf"(?<![^\W_])[^\W\d_](?:[\s.\-_*·]{{1,3}}[^\W\d_]){{{SPELLED - 1},}}(?![^\W_])")
_MEASURE = re.compile(r"\d+[a-z]{1,4}|[a-z]{1,3}\d{1,3}[a-z]?|\d+x\d+")  # 3cm, 2nd, 10mmhg; t12, c7, s1; 3x4


def words(text: str) -> list[str]:
    """`text`'s words as a judge would retype them (`normalised`), case folded; an apostrophe inside a word keeps it
    one word ("isn't")."""
    return _WORD.findall(normalised(text).casefold().replace("\u2019", "'"))


@functools.cache
def vocabulary() -> frozenset[str]:
    return frozenset(gzip.decompress(WORDS_FILE.read_bytes()).decode("utf-8").split())


def _script(character: str) -> str:
    """A letter's script as its Unicode name begins (LATIN, CYRILLIC, GREEK, CJK...)."""
    return unicodedata.name(character, "?").split(" ")[0]


def _one_edit(word: str, known: frozenset[str]) -> bool:
    """Whether a letter dropped, added, changed or two swapped make `word` a known word."""
    cut = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    letters = string.ascii_lowercase
    return any(a + b[1:] in known for a, b in cut if b) or \
        any(a + b[1] + b[0] + b[2:] in known for a, b in cut if len(b) > 1) or \
        any(a + c + b[1:] in known for a, b in cut if b for c in letters) or \
        any(a + c + b in known for a, b in cut for c in letters)


def _outside(word: str, known: frozenset[str], own: set[str]) -> int | None:
    """How many words outside the vocabulary a token counts for (0: inside); None when it does not count (a number, a
    single letter, a measurement, a word in a script other than Latin that the reference writes)."""
    if word.isdigit() or len(word) == 1 or _MEASURE.fullmatch(word):
        return None
    if word in known or word in own or word.split("'")[0] in known:
        return 0
    if any(c.isdigit() for c in word):
        return max(1, len(word) // CODE_LETTERS)  # digits inside letters: leetspeak, base64, a code
    if not all(_script(c) == "LATIN" for c in word if c.isalpha()):
        return None  # a script the reference writes (another is refused before): its words are not ours to read
    return int(not (len(word) >= TYPO_FROM and word.isascii() and _one_edit(word, known)))


def _cut(sentence: str, known: frozenset[str]) -> tuple[str, int]:
    """The sentence without its words cut by hyphens, and how many there were: pieces that are not all words, of
    two letters or more, whose join is a word ("ig-nore", "in-struc-tions"; not "x-ray", "C-A-R-E", "Swan-Ganz")."""
    cut = 0

    def joined(found: re.Match) -> str:
        nonlocal cut
        pieces = words(found.group().replace("-", " "))
        if "".join(pieces) not in known:
            return found.group()
        if any(len(p) > 1 and p not in known for p in pieces):
            cut += 1
            return " "
        return "".join(pieces)  # one word ("re-port"), not two
    return _HYPHENATED.sub(joined, sentence), cut


def _foreign(word: str, scripts: set[str]) -> str | None:
    latin = sum(_script(c) == "LATIN" for c in word if c.isalpha())
    other = [c for c in word if c.isalpha() and _script(c) != "LATIN" and _script(c) not in scripts]
    if len(other) >= 2 or (other and latin >= 2):
        return _script(other[0])
    return None


def _sentence(sentence: str, known: frozenset[str], own: set[str], scripts: set[str]) -> str | None:
    tokens = words(sentence)
    for word in tokens:
        if script := _foreign(word, scripts):
            return f"letters of another script ({script}) than the vocabulary's: {word[:20]!r}"
    if spelled := _SPELLED.search(sentence):
        return f"a word spelled letter by letter: {spelled.group()[:40]!r}"
    sentence, cut = _cut(sentence, known)
    flags = [1] * cut + [f for f in (_outside(w, known, own) for w in words(sentence)) if f is not None]
    outside = sum(flags)
    crowded = any(sum(flags[i:i + WINDOW]) >= CROWD for i in range(max(1, len(flags) - WINDOW + 1)))
    if (outside >= LEAST and outside >= SHARE * len(flags)) or crowded:
        return (f"not radiology: {outside} of {len(flags)} words outside the vocabulary in "
                f"{' '.join(sentence.split())[:60]!r}")
    return None


def not_radiology(text: str, reference: str | None = None) -> str | None:
    """Why `text` is not sent to a judge (its first sentence that is not radiology, in words), or None. The
    reference's words and scripts count as the vocabulary's: a report in Chinese against a Chinese reference is
    read."""
    own = set(words(reference or ""))
    scripts = {_script(c) for c in normalised(reference or "") if c.isalpha()}
    known = vocabulary()
    for sentence in _SENTENCE.split(normalised(text)):
        if sentence and (why := _sentence(sentence, known, own, scripts)):
            return why
    return None
