"""RaTEScore's sentence splitter, exactly: PyRuSH 1.0.13 with medspacy 1.3.1's rules on spaCy's English tokens.

RaTEScore 0.6.0 (`RaTEScore/utils.py: sentence_split`) runs `medspacy.load(medspacy_enable=["medspacy_pyrush",
"medspacy_conte"])` -- spaCy `blank("en")` plus the `medspacy_pyrush` component only (the second name is a typo
medspacy ignores) -- and keeps `str(sent).strip()` of each `doc.sents` that has a word and at least 3
characters. PyRuSH pins spaCy < 3.8, hence numpy < 2, on Python 3.11, so this module recomputes the same
sentences from the same rules: medspacy 1.3.1 `resources/en/rush_rules.tsv`, shipped verbatim as
rexrank/resources/rush_rules.tsv (see the README there). Three steps, each after the file it follows:

1. Rule matches -- PyFastNER 1.0.10 `FastCNER.py`, `WildCardFunctions.py`, `ReplicationFunctionsLambda.py`, as
   `RuSH.py` configures it (max_repeat=50, span_compare_method="scorewidth"). The rules form a character
   trie. From every start position a depth-first walk tries, in this order: the wildcards in trie order
   (\\s \\n \\d \\C \\c \\p \\a \\u \\w \\b \\( \\) ...), a "(" (the span begins here), a ")" (it ends here), a rule
   end, the literal character, and after an item followed by "+" both "once" and "as often as it matches,
   at most 50 more" -- no count in between. Without ")" a span ends where its rule ends. Each rule name
   (stbegin, stend) keeps a list: a new span overlapping a kept one replaces it only if wider (spans all carry
   the default score 1.0, so "scorewidth" compares widths) and is dropped otherwise. The first span of a
   list goes into the overlap index one character short (FastCNER's allowance for quicksectx's inclusive
   search, made for that span only). Then spans of PSEUDO rules go: the file has no type column, so
   `RuSH.backCompatableParseRule` makes the odd scores (1, 3) PSEUDO.
2. Sentence spans -- PyRuSH 1.0.13 `RuSH.py: segToSentenceSpans` (auto_fix_gaps=True, min_sent_chars=5). A
   sentence runs from a stbegin to one past the first character of the next usable stend, less trailing
   whitespace. Text before, between and after sentences, trimmed to [first non-space, last alphanumeric or
   .!?)]"], becomes a sentence if longer than 5 characters, else extends the previous one.
3. Sentence starts -- PyRuSH 1.0.13 `StaticSentencizerFun.pyx: cpredict_split_gaps` (merge_gaps=False, no
   maximum length; `PyRuSHSentencizer.py`) marks spaCy tokens: the one starting at a span's begin, the one
   after the last token starting inside a span, in each gap between spans its first whitespace token (else
   its first token), after the last span every whitespace token. spaCy's `Doc.sents` cuts before each marked
   token but the first: no mark gives the whole text as one sentence, "" gives none.

Why spaCy (>=3.8, in the `models` extra) stays, for its tokenizer only: step 3 reads token start offsets and
whether a token is whitespace. Whitespace tokens follow a simple rule, but within a run of non-space characters
the starts come from spaCy's English prefix, suffix and infix patterns (about 30 KB of Unicode classes) and
1,347 special cases, and RuSH's boundaries land there often (on 11% of our messy test reports the result would
change): in "No effusion. Lungs: clear;" RuSH ends the last sentence before ";", which spaCy splits off, so
RaTEScore keeps "Lungs: clear"; in "No effusion. Tube noted-" it ends before "-" too, but "noted-" is one
token, so it keeps "Tube noted-". Exactness would mean vendoring spaCy's tokenizer data. spaCy 3.8's English
tokenizer (data and algorithm) is 3.7.5's, the reference's, up to code formatting and a cache bound, and 3.8
supports numpy 2.

Randomness, reproduced: FastCNER's overlap index is a quicksectx 0.4.1 treap whose priorities come from C
rand(). When a new span overlaps two kept ones, the one it may replace is the last the treap lists, so the
result depends on the process's rand() history, and the reference can split one report differently on two
calls. That is rare: 1 of 20,088 messy synthetic reports changed over 8 rand() states. We emulate the treap
and glibc's rand() exactly, every report starting from a fresh process's state (srand(1), then quicksectx's
one draw at import): the report as the first one of a new RaTEScore process would split it. The parity runner
(tests/parity/run_references.py, job "rush") resets rand() that way before each report.

Speed: about 1.4 ms of CPU per 180-character report (the reference takes 5 to 10 times as long); the rule
trie is compiled once, on first use, and so is the tokenizer.
"""

from __future__ import annotations

import csv
import math
import string
import struct
from functools import lru_cache
from importlib import resources

from rexrank.models import models_extra

MAX_REPEAT = 50  # RuSH(max_repeat=50): "x+" takes at most 50 more characters
MIN_SENT_CHARS = 5  # RuSH(min_sent_chars=5)
_END = ""  # trie key of the names whose rules end at a node; no text character equals it
_PUNCT = frozenset(string.punctuation)
_GAP_END = frozenset('.!?)]"')
_RAND_MAX = 2147483647
_SEED = 1  # srand(1): glibc's state before any srand() call
_NLOG = struct.unpack("f", struct.pack("f", -1.0 / math.log(0.5)))[0]  # quicksectx's `cdef float nlog`

# Wildcards that consume one character (WildCardFunctions.py), as bits of a per-character mask; \b matches at 0
# without consuming, \e only at the end of the text, and unknown ones (the file's "\.") never match.
_ONE = {
    "s": lambda c: c in " \t\xa0",
    "n": lambda c: c in "\n\r",
    "(": lambda c: c == "(",
    ")": lambda c: c == ")",
    "d": str.isdigit,
    "C": str.isupper,
    "c": str.islower,
    "p": lambda c: c in _PUNCT,
    "a": lambda c: not c.isspace(),
    "u": lambda c: c > "~" and c != "\xa0",
    "w": lambda c: c > "~" or c.isspace(),
    "\\": lambda c: c == "\\",
}
_BIT = {k: 1 << i for i, k in enumerate(_ONE)}
_AT_0 = 1 << len(_ONE)  # \b
_REPEATS = {k: _BIT[k] for k in "sndCcpauw"}  # "+" after other wildcards adds nothing to "once"
_masks: dict[str, int] = {}


def _mask(c: str) -> int:
    m = _masks.get(c)
    if m is None:
        m = _masks[c] = sum(bit for k, bit in _BIT.items() if _ONE[k](c))
    return m


@lru_cache(maxsize=1)
def _rules() -> tuple:
    """The compiled rule trie. Built as FastCNER.addRule builds it: a dict per node keyed by rule character, in
    first-seen order; at _END {name: is ACTUAL}, where a later identical rule overrides an earlier one."""
    with resources.files("rexrank").joinpath("resources/rush_rules.tsv").open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.reader(f, delimiter="\t") if len(r) >= 3 and not r[0].startswith(("#", "@"))]
    typed = any(len(r) == 4 for r in rows)  # IOUtils' full_definition; else odd scores are PSEUDO
    trie: dict = {}
    for rule, score, name, *rest in rows:
        if "[" in rule:
            raise ValueError(f"RuSH rule {rule!r}: [a|b] groups are not supported")
        actual = (rest[0].strip() if len(rest) == 1 else "ACTUAL") == "ACTUAL" if typed else float(score) % 2 == 0
        node = trie
        for ch in rule:
            node = node.setdefault(ch, {})
        node.setdefault(_END, {})[name.strip()] = actual
    return _compile(trie, any("+" in r[0] for r in rows))


def _compile(node: dict, repeats: bool, memo: dict | None = None) -> tuple:
    """A trie node as the tuple the matcher walks: (wildcards [(bit, step, child, key)] in trie order, "(" child,
    ")" child, names ending here, literal children, "+" child, what happens at the end of the text, the mask of
    its wildcards, whether it acts on any character)."""
    memo = {} if memo is None else memo
    if id(node) in memo:
        return memo[id(node)]
    sub = {k: _compile(v, repeats, memo) for k, v in node.items() if k != _END}
    wild = {k: _compile(v, repeats, memo) for k, v in node.get("\\", {}).items() if k != _END}
    wilds = tuple((_AT_0, 0, child, k) if k == "b" else (_BIT[k], 1, child, k)
                  for k, child in wild.items() if k in _BIT or k == "b")
    close = node.get(")", {})
    if _END in node:
        at_end = (0, node[_END])
    elif "e" in node.get("\\", {}):
        at_end = (0, node["\\"]["e"][_END])
    elif _END in close:
        at_end = (1, close[_END])
    elif "e" in close.get("\\", {}):
        at_end = (2, _compile(close["\\"], repeats, memo))
    elif "+" in node:
        at_end = (3, sub["+"])
    else:
        at_end = None
    lits = {k: v for k, v in sub.items() if k not in "()"}
    plus = sub.get("+") if repeats else None
    anchored = "(" in node or ")" in node or _END in node or plus is not None  # can act on any character
    memo[id(node)] = out = (wilds, sub.get("("), sub.get(")"), node.get(_END), lits, plus, at_end,
                            sum(w[0] for w in wilds), anchored)
    return out


class _Node:
    """A quicksectx 0.4.1 IntervalNode: [s, t] -> slot, with a treap priority."""

    __slots__ = ("s", "t", "slot", "prio", "left", "right")

    def __init__(self, s: int, t: int, slot: int, draw):
        r = draw()  # quicksectx: ceil(nlog * log(-1 / (rand() / RAND_MAX - 1))) into an int; NaN -> INT_MIN
        self.prio = math.ceil(_NLOG * math.log(-1.0 / (r / _RAND_MAX - 1.0))) if r < _RAND_MAX else -(2**31)
        self.s, self.t, self.slot, self.left, self.right = s, t, slot, None, None


def _insert(node: _Node | None, new: _Node) -> _Node:
    """IntervalNode._insert: right if the start is greater, else left; rotate up a child of higher priority."""
    if node is None:
        return new
    if new.s > node.s:
        node.right = top = _insert(node.right, new)
        if node.prio < top.prio:
            node.right, top.left = top.left, node
            return top
    else:
        node.left = top = _insert(node.left, new)
        if node.prio < top.prio:
            node.left, top.right = top.right, node
            return top
    return node


def _last_hit(node: _Node | None, b: int, e: int) -> _Node | None:
    """The last node IntervalNode._intersect lists (pre-order) for [b, e): what FastCNER's `pop()` takes."""
    if node is None:
        return None
    hit = _last_hit(node.right, b, e) if node.s <= e else None
    hit = hit or _last_hit(node.left, b, e)
    if hit is None and ((node.t > b and node.s < e) or b == e == node.s or node.s == node.t == b):
        hit = node
    return hit


def _remove(node: _Node | None, b: int, e: int, draw) -> _Node | None:
    """IntervalTree._remove: down the (start, end) order; a found node gives way to its children, joined."""
    if node is None:
        return None
    if (node.s, node.t) > (b, e):
        node.left = _remove(node.left, b, e, draw)
    elif (node.s, node.t) < (b, e):
        node.right = _remove(node.right, b, e, draw)
    else:
        return _join(node.left, node.right, draw)
    return node


def _join(a: _Node | None, b: _Node | None, draw) -> _Node | None:
    if a is None or b is None:
        return a or b
    if 1.0 * draw() * (a.prio + b.prio) < a.prio:
        a.right = _join(a.right, b, draw)
        return a
    b.left = _join(a, b.left, draw)
    return b


@lru_cache(maxsize=4)
def _fresh_rand(seed: int) -> tuple[int, ...]:
    """glibc's rand() state (TYPE_3, additive feedback: the last 31 words) after srand(seed) and the one draw
    quicksectx makes at import for its EmptyNode: with seed 1, where a fresh RaTEScore process starts."""
    r = [seed]
    for _ in range(30):
        r.append(16807 * r[-1] % _RAND_MAX)
    r += r[:3]
    for _ in range(310 + 1):  # glibc discards 310 words; the first output goes to EmptyNode
        r.append((r[-31] + r[-3]) & 0xFFFFFFFF)
    return tuple(r[-31:])


def _matches(text: str) -> tuple[list, list]:
    """FastCNER.process: the kept ACTUAL stbegin and stend spans, [begin, end], in list order."""
    trie = _rules()
    n = len(text)
    masks = [_mask(c) for c in text]
    if masks:
        masks[0] |= _AT_0
    found: dict[str, list] = {}  # name -> [spans [b, e, actual], overlap treap]
    words = list(_fresh_rand(_SEED))

    def draw() -> int:
        words.append((words[-31] + words[-3]) & 0xFFFFFFFF)
        return words[-1] >> 1

    def add(names, begin, end_mark, pos):
        b, e = begin, pos if end_mark == 0 else end_mark  # 0 means no ")" seen (even a ")" at 0)
        if b > e:
            b, e = e, b
        for name, actual in names.items():
            if name not in found:  # indexed one character short: FastCNER does so for a list's first span
                found[name] = [[[b, e, actual]], _Node(b, e - 1, 0, draw)]
                continue
            kept = found[name]
            spans, hit = kept[0], _last_hit(kept[1], b, e)
            if hit is None:
                kept[1] = _insert(kept[1], _Node(b, e, len(spans), draw))
                spans.append([b, e, actual])
            elif e - b > spans[hit.slot][1] - spans[hit.slot][0]:
                spans[hit.slot] = [b, e, actual]
                kept[1] = _insert(_remove(kept[1], b, e, draw), _Node(b, e, hit.slot, draw))  # by the new extent

    def walk(node, begin, end_mark, pos, wild, key):
        wilds, open_, close_, names, lits, plus, at_end, _, _ = node
        if pos < n:
            m, c = masks[pos], text[pos]
            for bit, step, child, k in wilds:
                if m & bit:
                    walk(child, begin, end_mark, pos + step, True, k)
            # (a "(", ")" or "+" child that can do nothing at pos is not called: half of all calls, a quarter
            # of the time); after a literal backslash "(" and ")" are not group marks
            if key != "\\":
                if open_ is not None and (open_[8] or m & open_[7] or c in open_[4]):
                    walk(open_, pos, end_mark, pos, False, "(")
                if close_ is not None and (close_[8] or m & close_[7] or c in close_[4]):
                    walk(close_, begin, pos, pos, False, ")")
            if names is not None:
                add(names, begin, end_mark, pos)
            if c in lits:
                walk(lits[c], begin, end_mark, pos + 1, False, c)
            if plus is not None:
                if plus[8] or m & plus[7] or c in plus[4]:
                    walk(plus, begin, end_mark, pos, False, "+")
                p = pos
                if not wild:
                    while p - pos < MAX_REPEAT and text[p] == key:
                        p += 1
                        if p == n:
                            break
                elif key in _REPEATS:
                    bit = _REPEATS[key]
                    while p - pos < MAX_REPEAT and masks[p] & bit:
                        p += 1
                        if p == n:
                            break
                else:
                    return
                if p == n or plus[8] or masks[p] & plus[7] or text[p] in plus[4]:
                    walk(plus, begin, end_mark, p, False, "+")
        elif at_end is not None:
            kind, then = at_end
            if kind == 0:
                add(then, begin, end_mark, pos)
            elif kind == 1:
                add(then, begin, pos, pos)
            else:
                walk(then, begin, pos, pos, False, " ") if kind == 2 else walk(then, begin, end_mark, pos, wild, key)

    for i in range(n):
        walk(trie, i, 0, i, False, " ")
    begins, ends = (found.get(name, ([], []))[0] for name in ("stbegin", "stend"))
    return [s for s in begins if s[2]], [s for s in ends if s[2]]


def _trim_gap(text: str, start: int, stop: int) -> list | None:
    """RuSH.trim_gap: text[start:stop] from its first non-space to its last alphanumeric or .!?)]" character,
    provided that comes after the first (so a 1-character gap is never a sentence)."""
    gap = text[start:stop]
    first = next((i for i, c in enumerate(gap) if not c.isspace()), -1)
    if first >= 0:
        for i in range(len(gap) - 1, first, -1):
            if gap[i].isalnum() or gap[i] in _GAP_END:
                return [start + first, start + i + 1]
    return None


def _fix_gap(out: list, text: str, start: int, stop: int) -> None:
    gap = _trim_gap(text, start, stop)
    if gap is not None:
        if gap[1] - gap[0] > MIN_SENT_CHARS:
            out.append(gap)
        elif out:
            out[-1][1] = gap[1]


def sentence_spans(text: str) -> list[list[int]]:
    """RuSH.segToSentenceSpans: [begin, end] character spans of the sentences RuSH finds in `text`."""
    begins, ends = _matches(text)
    out: list[list[int]] = []
    st_begin = st_end = j = 0
    started = False
    for i, (b, _, _) in enumerate(begins):
        if not started:
            st_begin = b
            if st_begin < st_end:
                continue
            started = True
        elif b < st_end:  # a stbegin inside the current sentence
            continue
        if out and st_begin > out[-1][1]:
            _fix_gap(out, text, out[-1][1], st_begin)
        elif not out and st_begin > 0:
            _fix_gap(out, text, 0, st_begin)
        last = i == len(begins) - 1
        for k in range(j, len(ends)):
            if not last and k < len(ends) - 1 and begins[i + 1][0] < ends[k][0] + 1:
                break  # the next stbegin comes first: this stend is not the sentence's end
            st_end, j = ends[k][0] + 1, k
            while st_end >= 1 and text[st_end - 1].isspace():
                st_end -= 1
            if st_end < st_begin:
                continue
            if started:
                out.append([st_begin, st_end])
                started = False
                if last or (k < len(ends) - 1 and begins[i + 1][0] > ends[k + 1][1]):
                    continue
                break
            out[-1] = [st_begin, st_end]  # a later stend moves the sentence's end
    if out:
        gap = _trim_gap(text, 0, out[0][0])
        if gap is not None:
            if out[0][0] <= ends[0][0]:
                out[0][0] = gap[0]
            else:
                out.insert(0, gap)
        gap = _trim_gap(text, out[-1][1], len(text))
        if gap is not None:
            if gap[1] - gap[0] > MIN_SENT_CHARS:
                out.append(gap)
            else:
                out[-1][1] = gap[1]
    else:
        gap = _trim_gap(text, 0, len(text))
        if gap is not None and gap[1] - gap[0] > MIN_SENT_CHARS:
            out.append(gap)
    return out


def _starts(idx: list[int], space: list[bool], spans: list[list[int]]) -> list[bool]:
    """cpredict_split_gaps: which tokens (start offsets `idx`, whitespace or not) begin a sentence."""
    n, m = len(idx), len(spans)
    marks = [False] * n
    t = k = 0
    while t < n:
        at = idx[t]
        if k < m - 1 and spans[k][1] <= at < spans[k + 1][0]:  # a gap between spans k and k + 1
            g = t
            while g < n and idx[g] < spans[k + 1][0]:
                g += 1
            marks[next((i for i in range(t, g) if space[i]), t)] = True
            t = g
            continue
        while k < m and at >= spans[k][1]:
            k += 1
        if k == m:
            marks[t] = marks[t] or space[t]
        elif at >= spans[k][0]:
            if at == spans[k][0]:
                marks[t] = True
            if t + 1 < n and idx[t + 1] >= spans[k][1]:
                marks[t + 1] = True
        t += 1
    return marks


@lru_cache(maxsize=1)
def _tokenizer():
    return models_extra("spacy", "blank")("en").tokenizer


def split(text: str) -> list[str]:
    """`[str(s) for s in nlp(text).sents]` of RaTEScore's medspacy pipeline: the sentences unstripped (a
    sentence keeps leading whitespace tokens and inner newlines; only a token's trailing space is cut)."""
    doc = _tokenizer()(text)
    text = doc.text
    idx = [t.idx for t in doc]
    stop = [t.idx + len(t.text) for t in doc]
    marks = _starts(idx, [t.text.isspace() for t in doc], sentence_spans(text))
    cuts = [0] + [i for i in range(1, len(idx)) if marks[i]] + [len(idx)]
    return [text[idx[a] : stop[b - 1]] for a, b in zip(cuts, cuts[1:]) if b > a]


def ratescore_sentences(text: str) -> list[str]:
    """The sentences RaTEScore's `sentence_split` keeps for one report: stripped, with a word, >= 3 characters."""
    return [s for s in (x.strip() for x in split(text)) if s.split() and len(s) >= 3]
