"""Makes the word list that `rexrank.llm.radiology` reads a judged candidate against (src/rexrank/resources/
vocabulary/words.txt.gz): every word of the public IU-Xray (Open-i) reports and of an English dictionary, lowercase,
one a line. No report text is kept: only the words, sorted, which say nothing of any report.

    apt-get install wamerican wbritish             # SCOWL's English lists: /usr/share/dict/{american,british}-english
    git clone https://github.com/rajpurkarlab/ReXrank /data/ReXrank            # data/iu_xray/ReXRank_IUXray_*.json
    git clone https://github.com/WangXuanmin/MRG_RL /data/MRG_RL               # data/iu_xray/annotation.json
    .venv/bin/python benchmarks/radiology_vocabulary.py --rexrank /data/ReXrank --annotation \
        /data/MRG_RL/data/iu_xray/annotation.json [--dictionary PATH ...] [--check]

The provenance (commits, counts, licences) is written down in src/rexrank/resources/vocabulary/README.md; `--check`
says whether the shipped list is what these sources make now (exit 1 if not).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from rexrank.llm.radiology import WORDS_FILE, words

IU_FIELDS = ("report", "section_findings", "section_impression", "context")  # ReXrank's IU-Xray split files


def report_words(rexrank: Path, annotation: Path) -> set[str]:
    """The words of IU-Xray's reports: ReXrank's test and valid splits (findings, impression, indication) and an
    R2Gen-style annotation file of the whole collection (train, val, test)."""
    texts = []
    for path in sorted((rexrank / "data" / "iu_xray").glob("ReXRank_IUXray_*.json")):
        texts += [study.get(field) or "" for study in json.loads(path.read_text(encoding="utf-8")).values()
                  for field in IU_FIELDS]
    for split in json.loads(annotation.read_text(encoding="utf-8")).values():
        texts += [study["report"] for study in split]
    return {w for text in texts for w in words(text) if w.isalpha() and len(w) > 1}


def dictionary_words(paths: list[Path]) -> set[str]:
    """The dictionaries' words as `words` reads them (lowercase; "isn't" stays one word), letters and apostrophes."""
    out = set()
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            out.update(w for w in words(line) if len(w) > 1)
    return out


def build(rexrank: Path, annotation: Path, dictionaries: list[Path]) -> tuple[list[str], dict[str, int]]:
    reports, english = report_words(rexrank, annotation), dictionary_words(dictionaries)
    return sorted(reports | english), {"reports": len(reports), "dictionary": len(english),
                                       "reports only": len(reports - english)}


def write(listed: list[str], path: Path) -> None:
    """gzip with no name and no time in its header: the same words make the same bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
        out.write("".join(f"{w}\n" for w in listed).encode("utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rexrank", type=Path, required=True, help="a checkout of rajpurkarlab/ReXrank")
    parser.add_argument("--annotation", type=Path, required=True, help="an R2Gen-style iu_xray annotation.json")
    parser.add_argument("--dictionary", type=Path, nargs="+", default=[Path("/usr/share/dict/american-english"),
                                                                       Path("/usr/share/dict/british-english")])
    parser.add_argument("--out", type=Path, default=WORDS_FILE)
    parser.add_argument("--check", action="store_true", help="compare with the shipped list instead of writing")
    args = parser.parse_args()
    listed, counts = build(args.rexrank, args.annotation, args.dictionary)
    print(f"{len(listed):,} words ({', '.join(f'{k} {v:,}' for k, v in counts.items())})")
    if args.check:
        shipped = gzip.decompress(args.out.read_bytes()).decode("utf-8").split()
        print("the shipped list is what these sources make" if shipped == listed else
              f"the shipped list differs: {len(set(shipped) ^ set(listed)):,} words")
        sys.exit(0 if shipped == listed else 1)
    write(listed, args.out)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
