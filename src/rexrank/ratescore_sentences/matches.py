"""Step 1 of RaTEScore's sentence splitter: the rule matches, as PyFastNER 1.0.10 finds them for PyRuSH
(`rexrank.ratescore_sentences` says what is reproduced and why; this module is its first step: the rules' character
trie, the depth-first walk over it, and quicksectx's treap with glibc's rand(), which decides overlaps)."""

from __future__ import annotations

import csv
import math
import string
import struct
from functools import lru_cache
from importlib import resources

MAX_REPEAT = 50  # RuSH(max_repeat=50): "x+" takes at most 50 more characters
MIN_SENT_CHARS = 5  # RuSH(min_sent_chars=5)
_END = ""  # trie key of the names whose rules end at a node; no text character equals it
_PUNCT = frozenset(string.punctuation)
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


def _repeat_end(text: str, masks: list[int], pos: int, key: str, wild: bool) -> int | None:
    """Where "key+" stops, from pos: at most MAX_REPEAT more of the literal or wildcard; None for a wildcard
    whose "+" adds nothing to "once"."""
    if wild and key not in _REPEATS:
        return None
    bit, p, n = _REPEATS.get(key, 0), pos, len(text)
    while p < n and p - pos < MAX_REPEAT and (masks[p] & bit if wild else text[p] == key):
        p += 1
    return p


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
                p = _repeat_end(text, masks, pos, key, wild)
                if p is None:
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
