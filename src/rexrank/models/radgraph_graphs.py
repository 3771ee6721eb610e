"""A RadGraph, as the model writes it and the metric reads it: entities and relations over a report's tokens, and the
reference's tokenisation. Shared by the model side (`rexrank.models.radgraph`, text -> graph) and the math
(`rexrank.scorers.radgraph`, graphs -> F1); no torch here, so the math imports it without the model's stack."""

from __future__ import annotations

import re
from dataclasses import dataclass

LABELS = ("ANAT-DP", "OBS-DP", "OBS-DA", "OBS-U")
RELATIONS = ("located_at", "modify", "suggestive_of")
# The reference's report tokenisation (radgraph `utils.preprocess_reports`, CXR-Report-Metric inference):
# a space around each of / , : . ! ? ( ) -- the character class `[/,-,:,.,!?()]` is a range ",-," that
# matches only ",", so "-" is *not* split -- then whitespace split. Kept verbatim: it defines the tokens.
_PUNCTUATION = re.compile(r"(?<! )(?=[/,-,:,.,!?()])|(?<=[/,-,:,.,!?()])(?! )")


def tokenize_report(report: str) -> list[str]:
    return _PUNCTUATION.sub(" ", report).split()


@dataclass(frozen=True)
class Entity:
    text: str  # the span's tokens joined by single spaces, as the reference's "tokens" field
    label: str
    start: int  # token indices, inclusive
    end: int


@dataclass(frozen=True)
class Graph:
    """One report's RadGraph: entities, and relations as (source index, target index, relation name)."""

    entities: tuple[Entity, ...] = ()
    relations: tuple[tuple[int, int, str], ...] = ()

    @classmethod
    def from_reference_json(cls, data: dict) -> Graph:
        """From the radgraph package's output for one report: {"entities": {id: {tokens, label, start_ix,
        end_ix, relations: [[relation, target id], ...]}}}."""
        ids = list(data.get("entities", {}))
        position = {entity_id: i for i, entity_id in enumerate(ids)}
        entities, relations = [], []
        for entity_id in ids:
            entity = data["entities"][entity_id]
            entities.append(Entity(entity["tokens"], entity["label"], entity["start_ix"], entity["end_ix"]))
            relations += [(position[entity_id], position[target], relation)
                          for relation, target in entity["relations"]]
        return cls(tuple(entities), tuple(relations))

    def entity_set(self) -> set[tuple[str, str]]:
        return {(e.text, e.label) for e in self.entities}

    def relation_set(self) -> set[tuple[tuple[str, str], tuple[str, str], str]]:
        e = self.entities
        return {((e[s].text, e[s].label), (e[t].text, e[t].label), relation) for s, t, relation in self.relations}
