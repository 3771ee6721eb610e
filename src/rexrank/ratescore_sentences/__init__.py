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

from functools import lru_cache

from rexrank.errors import MetricUnavailable
from rexrank.ratescore_sentences.matches import MIN_SENT_CHARS, _matches

_GAP_END = frozenset('.!?)]"')  # RuSH trims a gap to its last alphanumeric or one of these


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
    try:
        from spacy import blank
    except ImportError as err:  # the models extra's message, as rexrank.models.models_extra gives it
        raise MetricUnavailable(f"needs {err.name}: pip install 'rexrank[models]'") from None
    return blank("en").tokenizer


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
