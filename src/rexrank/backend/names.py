"""Whether a model name passes for another: a new submission must not take a name that looks like another owner's.

Two names are the same name when their keys are equal. The key: the name as the board shows it (`sanitize_text`:
control, format, private-use and unassigned characters and the Hangul fillers removed), Unicode NFKC (fullwidth Ｍ is
M, ligatures split), then the confusable skeleton of Unicode Technical Standard #39 (Cyrillic С is Latin C, `rn` is
`m`, `0` is `O`) as ICU's spoof checker computes it from Unicode's own confusables table, case-folded and skeletonised
again (so `I` and `l` meet after case is gone), and last letters and digits only: "Che-Xagent", "CHEXAGENT" and
"ChéXagent" are all "CheXagent". ICU comes from PyICU, the maintained binding (`pip install 'rexrank[backend]'`).
"""

from __future__ import annotations

import functools
import unicodedata

from rexrank.errors import InputError
from rexrank.text import sanitize_text


@functools.cache
def _spoof_checker():
    try:
        import icu
    except ImportError:
        raise InputError("comparing model names needs ICU's confusable skeletons: pip install 'rexrank[backend]' "
                         "(PyICU; on Debian or Ubuntu first apt-get install libicu-dev pkg-config)") from None
    return icu.SpoofChecker()


def skeleton(text: str) -> str:
    """UTS #39 skeleton of `text` (NFD, each character mapped to its prototype, NFD again)."""
    return _spoof_checker().getSkeleton(0, text)


def name_key(name: str) -> str:
    """What `name` looks like, as a comparable key (empty when nothing visible is left)."""
    text = unicodedata.normalize("NFKC", sanitize_text(name, max_len=1000))
    text = skeleton(skeleton(text).casefold())
    return "".join(ch for ch in unicodedata.normalize("NFKD", text).casefold() if ch.isalnum())  # marks go


def lookalike(name: str, others: dict[str, str]) -> str | None:
    """The first of `others` (owner -> name) whose name looks like `name`, as 'NAME (owner OWNER)'; else None."""
    key = name_key(name)
    return next((f"{other!r} of {owner}" for owner, other in others.items() if key and name_key(other) == key), None)
