"""MIMIC-CXR report sections as MIMIC-CXR's own scripts find them.

The reference is `MIT-LCP/mimic-cxr` at commit 31901464793d0bb23835092f05bd1aba6af7baff: `txt/section_parser.py`
(`section_text`, `normalize_section_names`, `custom_mimic_cxr_rules`) and `txt/create_section_files.py`, whose
`mimic_cxr_sectioned.csv` (one row per study: impression, findings, last_paragraph, comparison) is where the
findings/impression of the report generation test sets come from. This is our implementation of the same rules;
the header pattern, the section-name tables and the per-study tables are the reference's, kept as facts (MIT-LCP
code, MIT licence). docs/reference-notes/mimic-cxr-sections.md walks through the rules and their quirks.

    parts = sections(text)                      # [Section("preamble", ...), Section("findings", ...), ...]
    row = sectioned("s50414267", text)          # {"impression": ..., "findings": ..., ...}, None for a custom study
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REFERENCE = "MIT-LCP/mimic-cxr@31901464793d0bb23835092f05bd1aba6af7baff txt/section_parser.py"

# A header: a newline, one space (every line of a MIMIC report starts with one), capitals, a colon, one whitespace.
HEADER = re.compile(r"\n ([A-Z ()/,-]+):\s")
PARAGRAPH = "\n \n"  # a blank line of a report (lines start with a space)

# `normalize_section_names.frequent_sections`: header (lower case) -> section name, with the reference's counts
# over the 227,835 reports where it gives them. The typos are the reports' ("ndication" -> impression is the
# reference's own mapping, kept).
NAMES = {
    "preamble": "preamble", "impression": "impression", "comparison": "comparison", "indication": "indication",
    "findings": "findings", "examination": "examination", "technique": "technique", "history": "history",
    "comparisons": "comparison", "clinical history": "history", "reason for examination": "indication",
    "notification": "notification", "reason for exam": "indication", "clinical information": "history",
    "exam": "examination", "clinical indication": "indication", "conclusion": "impression",
    "chest, two views": "findings", "recommendation(s)": "recommendations", "type of examination": "examination",
    "reference exam": "comparison", "patient history": "history", "addendum": "addendum",
    "comparison exam": "comparison", "date": "date", "comment": "comment", "findings and impression": "impression",
    "wet read": "wet read", "comparison film": "comparison", "recommendations": "recommendations",
    "findings/impression": "impression", "pfi": "history", "recommendation": "recommendations",
    "wetread": "wet read", "ndication": "impression", "impresson": "impression", "imprression": "impression",
    "imoression": "impression", "impressoin": "impression", "imprssion": "impression", "impresion": "impression",
    "imperssion": "impression", "mpression": "impression", "impession": "impression",
    "findings/ impression": "impression", "finding": "findings", "findins": "findings", "findindgs": "findings",
    "findgings": "findings", "findngs": "findings", "findnings": "findings", "finidngs": "findings",
    "idication": "indication", "reference findings": "findings", "comparision": "comparison",
    "comparsion": "comparison", "comparrison": "comparison", "comparisions": "comparison",
}
# A header not in NAMES that contains one of these words is that section, first word first ("findings and
# history" is findings)...
MAIN_SECTIONS = ("impression", "findings", "history", "comparison", "addendum")
# ... else one that names a view or a body part is findings ("PA AND LATERAL VIEWS OF THE CHEST").
VIEW_WORDS = re.compile("(chest|portable|pa and lateral|lateral and pa|ap and lateral|lateral and ap|frontal and|"
                        "two views|frontal view|pa view|ap view|one view|lateral view|bone window|frontal upright|"
                        "frontal semi-upright|ribs|pa and lat)")

# create_section_files.py's choice of the "conclusion", best first: the last section of the first name present.
CONCLUSION_ORDER = ("impression", "findings", "last_paragraph", "comparison")

# `custom_mimic_cxr_rules`: reports the rules section wrongly, with the section that holds their conclusion...
CUSTOM_SECTION = {
    "s50913680": "recommendations", "s59363654": "examination", "s59279892": "technique",
    "s59768032": "recommendations", "s57936451": "indication", "s50058765": "indication",
    "s53356173": "examination", "s53202765": "technique", "s50808053": "technique", "s51966317": "indication",
    "s50743547": "examination", "s56451190": "note", "s59067458": "recommendations", "s59215320": "examination",
    "s55124749": "indication", "s54365831": "indication", "s59087630": "recommendations",
    "s58157373": "recommendations", "s56482935": "recommendations", "s58375018": "recommendations",
    "s54654948": "indication", "s55157853": "examination", "s51491012": "history",
}
# ... or its character span ([0, 0]: "no findings at all in the entire report").
CUSTOM_SPAN = {
    "s50525523": (201, 349), "s57564132": (233, 554), "s59982525": (313, 717), "s53488209": (149, 475),
    "s54875119": (234, 988), "s50196495": (59, 399), "s56579911": (59, 218), "s52648681": (292, 631),
    "s59889364": (172, 453), "s53514462": (73, 377), "s59505494": (59, 450), "s53182247": (59, 412),
    "s51410602": (47, 320), "s56412866": (522, 822), "s54986978": (59, 306), "s59003148": (262, 505),
    "s57150433": (61, 394), "s56760320": (219, 457), "s59562049": (158, 348), "s52674888": (145, 296),
    "s55258338": (192, 568), "s59330497": (140, 655), "s52119491": (179, 454),
    "s58235663": (0, 0), "s50798377": (0, 0), "s54168089": (0, 0), "s53071062": (0, 0), "s56724958": (0, 0),
    "s54231141": (0, 0), "s53607029": (0, 0), "s52035334": (0, 0),
}


@dataclass(frozen=True)
class Section:
    name: str  # normalised: "findings", "impression", "preamble", "full report", "last_paragraph", ...
    text: str  # as in the report, unstripped
    start: int  # offset of `text` in the report (for last_paragraph, the reference's offset; see the notes)


def section_name(header: str) -> str:
    """A header's section name (`normalize_section_names` for one name)."""
    name = header.lower().strip()
    if name in NAMES:
        return NAMES[name]
    main = next((m for m in MAIN_SECTIONS if m in name), None)
    if main is not None:
        return main
    return "findings" if VIEW_WORDS.search(name) else name


def sections(text: str) -> list[Section]:
    """The report cut at its headers (`section_text`): a "preamble" before the first header, or one "full report"
    section when there is none; empty findings/impression sections dropped; and when neither is left, the text
    after the first blank line of the last section split off as "last_paragraph"."""
    header = HEADER.search(text)
    if header is None:
        found = [("full report", text, 0)]
    else:
        found = [("preamble", text[:header.start(1)], 0)]
        while header is not None:
            start = header.end()
            # The next header is looked for from the end of this section's first line: a header on that line
            # (a continuation of this one, or text right after "FINDINGS:\n") does not start a section.
            newline = text.find("\n", start)
            following = HEADER.search(text, start if newline == -1 else newline)
            stop = len(text) if following is None else following.start()
            found.append((header.group(1), text[start:stop], start))
            header = following
    parts = [Section(section_name(name), body, start) for name, body, start in found]
    parts = [p for p in parts if p.name not in ("findings", "impression") or p.text.strip()]
    names = {p.name for p in parts}
    last = parts[-1]
    if "findings" not in names and "impression" not in names and PARAGRAPH in last.text:
        head, _, rest = last.text.partition(PARAGRAPH)  # everything after the *first* blank line
        parts[-1] = Section(last.name, head, last.start)
        parts.append(Section("last_paragraph", rest, last.start + len(head)))
    return parts


def last_section(parts: list[Section], name: str) -> Section | None:
    """The last section of that name (create_section_files.py's `list_rindex`): later sections win."""
    return next((p for p in reversed(parts) if p.name == name), None)


def in_custom_tables(study_id: str) -> bool:
    return _key(study_id) in CUSTOM_SECTION or _key(study_id) in CUSTOM_SPAN


def sectioned(study_id: str, text: str) -> dict[str, str | None] | None:
    """The study's row of `mimic_cxr_sectioned.csv`: impression, findings, last_paragraph and comparison, each the
    last section of that name, stripped, or None. None for a study in the custom tables: the script writes no row
    for them (it takes their conclusion from the table and moves on)."""
    return None if in_custom_tables(study_id) else row(sections(text))


def row(parts: list[Section]) -> dict[str, str | None]:
    """The sectioned row of a report's sections."""
    return {name: (p.text.strip() if (p := last_section(parts, name)) else None) for name in CONCLUSION_ORDER}


def conclusion(study_id: str, text: str) -> str | None:
    """The study's row of `mimic_cxr_sections.csv` (the "conclusion" CheXpert and NegBio label): the custom span
    (unstripped, as the script writes it) or custom section, else the last section of the first name in
    CONCLUSION_ORDER present, else "". None where the custom section is absent (the script stops there with a
    ValueError)."""
    key = _key(study_id)
    if key in CUSTOM_SPAN:
        begin, end = CUSTOM_SPAN[key]
        return text[begin:end]
    parts = sections(text)
    if key in CUSTOM_SECTION:
        chosen = last_section(parts, CUSTOM_SECTION[key])
        return chosen.text.strip() if chosen else None
    for name in CONCLUSION_ORDER:
        if (chosen := last_section(parts, name)) is not None:
            return chosen.text.strip()
    return ""


def _key(study_id: str) -> str:
    """The reference keys studies as report file stems, "s50414267"; ReXrank writes "50414267"."""
    study_id = str(study_id)
    return study_id if study_id.startswith("s") else f"s{study_id}"
