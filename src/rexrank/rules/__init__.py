"""The rules every submission pull request passes before anything else reads it.

A pull request to the results repo is untrusted input from anyone with a Hub account. These checks are pure
(no network, nothing written) and run on either

- the list of paths the pull request touches, each with its size and change (`Touched`), for the structure only,
  or with `root=` a folder holding those files (downloaded as plain files, not the Hub cache's symlinks) for the
  contents too; or
- a local folder laid out as the repo (`submissions/<id>/...` under it), walked without following links.

Rules (each problem found is reported, by path; contents are quoted only as short escaped snippets):

1. One folder: a pull request touches `submissions/<id>/` and nothing else (never README.md, leaderboard.parquet,
   another submission or anything outside `submissions/`); a folder with a recorded owner changes only when the
   pull request's author is that owner; a new folder adds files only (no edits, no deletions) and has its card.
2. Paths: relative, `/`-separated, no `..`/`.`/empty segments, no hidden names, no backslashes, no control,
   invisible or bidirectional-override characters, NFC and ASCII, and exactly the layout's lower-case names;
   in a folder no symlinks and no special files anywhere.
3. Sizes: bounded per kind of file, in total and in number of files.
4. Contents parsed with limits: JSON bytes bounded before parsing, then nesting depth and item count walked with
   an explicit stack, repeated keys, NaN/Infinity and overflowing numbers refused; the card has known fields only;
   a result passes `Result.from_dict`, matches its file name and is scored (one claiming `generated`, the
   maintainers' inference job's, is accepted only as the bytes the ledger says that job wrote); JSONL line length,
   line count and one flat `{"study_id", "prediction"}` object per line; parquet read by pyarrow only, plain
   string/number columns, no extension types or unknown metadata, and what it costs bounded before anything is
   decoded: footer, rows, row groups, columns, pages and the sizes their own headers declare, text plain or
   dictionary-encoded, each text's length and the size the table decodes to (per table, and for a pull request's
   tables together).
5. Nothing from a pull request is ever executed or deserialised into objects: JSON and Arrow only.
6. Text that reaches the board goes through `sanitize_text`, then `to_markdown` or `to_html`; links only through
   `safe_url`.
"""

from rexrank.rules.check import CHANGES, Checked, SubmissionRejected, Touched, check_submission
from rexrank.rules.contents import Card, check_card, check_predictions, check_result, metric_problems
from rexrank.rules.layout import MAINTAINER_FILES, RADRBENCH_FILE, classify, path_problems
from rexrank.rules.limits import JsonLimits, parse_json
from rexrank.rules.parquet import check_per_study
from rexrank.rules.radrbench import check_radrbench

__all__ = ["CHANGES", "MAINTAINER_FILES", "RADRBENCH_FILE", "Card", "Checked", "JsonLimits", "SubmissionRejected",
           "Touched", "check_card", "check_per_study", "check_predictions", "check_radrbench", "check_result",
           "check_submission", "classify", "metric_problems", "parse_json", "path_problems"]
