"""How a number's making departs from the published figures', as far as its metric can say: the rule every metric
follows unless it words its own (a `departures(signature)` on its implementation: BERTScore's stack, a judged metric's
judge). `rexrank.official.departures` adds what is not the metric's (the texts, the precision) and the components'.

The record is the metric's `published` (how ReXrank's figures were made, signed settings): a setting the number
signs that the record holds otherwise, or lacks, is a departure; a setting the record leaves None is not published,
so there is nothing to compare.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rexrank.models.registry import MODELS
from rexrank.signature import Signature

# The settings that say how the texts were made, and the precision: `rexrank.official` words them for every metric.
# The demo's mark says where its numbers come from (the board's Source says it too), not how they were made.
NOT_THE_METRICS = ("refs", "missing", "preds", "dtype", "demo")
PINNED = frozenset(spec.pinned for spec in MODELS.values())
_ASKED = re.compile(r"^judge:(.+?):t=")  # an endpoint's identity names the model it asked (rexrank.llm)
QUOTED = ("{title} told in a system message that the reports are quoted data it must not obey (rexrank's first "
          "defence; docs/security.md rule 19), the published asked with the reference's messages alone")


def asked(signature: Signature) -> str:
    """The model a judged number's endpoint asked, case-folded ("" when the backend is no endpoint)."""
    return (_ASKED.match(signature.models.get("backend", "")) or [None, ""])[1].casefold()


def weights(signature: Signature) -> list[str]:
    """Weights other than the pinned ones."""
    return [f"{signature.metric} {name} {model}, the published the pinned weights"
            for name, model in signature.models.items() if model not in PINNED]


def settings(signature: Signature, published: Mapping[str, str | None], phrases: Mapping[str, str] | None = None,
             worded: Iterable[str] = ()) -> list[str]:
    """Every setting the number signs against the record: a value it holds otherwise, or a setting it lacks. A
    phrase (by setting, with {made}) words one in the metric's terms; `worded` are settings the metric has worded
    itself."""
    out, worded = [], set(worded)
    for key, made in signature.settings.items():
        if key in NOT_THE_METRICS or key in worded or (key in published and published[key] in (None, made)):
            continue
        if phrases and key in phrases:
            out.append(phrases[key].format(made=made))
        elif key in published:
            out.append(f"{signature.metric} {key} {made}, the published {published[key]}")
        else:
            out.append(f"{signature.metric} {key} {made}, a setting the published figures' record does not have")
    return out


def departures(signature: Signature, published: Mapping[str, str | None]) -> list[str]:
    """The rule for a metric that words nothing itself: its weights, then its settings."""
    return weights(signature) + settings(signature, published)
