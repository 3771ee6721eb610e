"""Markdown as the Hub renders a comment (CommonMark with GFM tables), for tests that assert on what a reader sees:
the cells of a table as text, and which headings, links, images and raw HTML the comment contains."""

from html.parser import HTMLParser

from markdown_it import MarkdownIt

_MARKDOWN = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def html(markdown: str) -> str:
    return _MARKDOWN.render(markdown)


class _Elements(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def elements(markdown: str) -> _Elements:
    parsed = _Elements()
    parsed.feed(html(markdown))
    return parsed


def table_rows(markdown: str) -> list[list[str]]:
    """Each table row's cells as the reader sees them (header row first)."""
    return elements(markdown).rows


def markup(markdown: str) -> list[tuple[str, dict]]:
    """The active elements: headings, links, images and any HTML tag a table or paragraph does not make."""
    plain = {"p", "table", "thead", "tbody", "tr", "th", "td", "strong", "em", "code", "ul", "li"}
    return [(tag, attrs) for tag, attrs in elements(markdown).tags if tag not in plain]
