"""Text that came from a submission, made safe for the board and for the maintainers' comments.

`sanitize_text` makes plain one-line text (control, format, private-use and unassigned characters removed); then
`to_markdown` or `to_html` escapes it for its target; a link goes only through `safe_url`. `shown` quotes a path or
snippet in a message, non-printable characters escaped.
"""

from __future__ import annotations

import html
import ipaddress
import re
import unicodedata
from urllib.parse import urlsplit

_INVISIBLE_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")  # Hangul fillers and the braille blank
_MAX_MARKS = 2  # combining marks kept on one character (no "zalgo" text spilling over the table)


def sanitize_text(s: object, max_len: int = 200) -> str:
    """Plain one-line text: NFC, control/format/private/unassigned characters (zero-width, bidirectional
    overrides, NUL...) removed, every run of whitespace one space, at most `max_len` characters (an ellipsis
    marks a cut). Not escaped: use `to_markdown` or `to_html` for a target."""
    if s is None:
        return ""
    text = s if isinstance(s, str) else str(s)
    text = unicodedata.normalize("NFC", text[: max(4 * max_len, 1024)])
    kept: list[str] = []
    marks = 0
    for ch in text:
        category = unicodedata.category(ch)
        if ch.isspace() or category in ("Zs", "Zl", "Zp"):
            kept.append(" ")
            marks = 0
        elif category[0] == "C" or ch in _INVISIBLE_LETTERS:
            continue
        elif category in ("Mn", "Me"):
            marks += 1
            if marks <= _MAX_MARKS:
                kept.append(ch)
        else:
            marks = 0
            kept.append(ch)
    text = " ".join("".join(kept).split())
    if len(text) > max_len:
        text = text[: max(max_len - 1, 0)].rstrip() + "\u2026" if max_len > 0 else ""
    return text


_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_MARKDOWN_ESCAPED = {c: "\\" + c for c in "\\`*_{}[]()#+-.!|~:=^$%@,;/?"} | _ENTITIES


def to_markdown(s: object, max_len: int = 200) -> str:
    """`sanitize_text`, then every markdown-active ASCII punctuation backslash-escaped and & < > " ' as HTML
    entities: safe inside a paragraph or a table cell (`|` escaped), never a link, emphasis, heading or tag."""
    return "".join(_MARKDOWN_ESCAPED.get(c, c) for c in sanitize_text(s, max_len))


def to_html(s: object, max_len: int = 200) -> str:
    """`sanitize_text`, then HTML-escaped (& < > " '): safe as element text or a quoted attribute value."""
    return html.escape(sanitize_text(s, max_len), quote=True)


MAX_URL = 2048
_URL_REFUSED = re.compile(r"[\s\"'<>`\\{}|^]")
_HOST_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62})(?:\.[a-z0-9-]{1,63})*\.?$", re.IGNORECASE)
_MARKDOWN_URL = str.maketrans({"(": "%28", ")": "%29", "[": "%5B", "]": "%5D"})


def safe_url(url: object) -> str | None:
    """`url` if it is an absolute http(s) URL with a host and no credentials, in printable ASCII without
    whitespace, quotes, angle brackets, backslashes or braces; else None. Brackets and parentheses after the
    host come back percent-encoded, so the URL cannot end a markdown link `[text](url)` early. Put it in HTML
    through `html.escape`."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL or not url.isascii() or not url.isprintable():
        return None
    if _URL_REFUSED.search(url) or not url.lower().startswith(("https://", "http://")):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 -- raises ValueError on a port that is not a number in range
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc or "@" in parts.netloc or not host:
        return None
    if parts.netloc.startswith("["):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    elif not _HOST_NAME.match(host):
        return None
    head = f"{parts.scheme}://{parts.netloc}"
    return head + url[len(head):].translate(_MARKDOWN_URL)


def shown(text: object, limit: int = 120) -> str:
    """A path or snippet fit for a message: non-printable characters escaped, at most `limit` characters."""
    text = text if isinstance(text, str) else repr(text)
    shown = "".join(ch if ch.isprintable() and unicodedata.category(ch) != "Cf" else ascii(ch)[1:-1] for ch in
                    text[: limit * 2])
    return shown if len(shown) <= limit else shown[: limit - 1] + "\u2026"




def code_block(text: object, max_chars: int = 8000) -> str:
    """Submitted text shown whole but inert in a maintainers' comment (a smoke test's log): a fenced code block,
    whose fence is longer than any run of backticks in it (so nothing closes it early: CommonMark renders its content
    as text, markdown and HTML alike), control and format characters but tabs and line breaks removed, the last
    `max_chars` characters kept."""
    text = text if isinstance(text, str) else str(text)
    text = "".join(ch for ch in text[-max_chars:] if ch in "\n\t" or (
        unicodedata.category(ch)[0] != "C" and ch not in _INVISIBLE_LETTERS))
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text.rstrip()}\n{fence}"
