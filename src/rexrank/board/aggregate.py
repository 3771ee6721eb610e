"""The aggregate job: the board (`leaderboard.parquet`) rebuilt from a results repo's merged submissions and the
imported official ReXrank rows, and the RadRBench-CXR table (`radrbench.parquet`) from the submissions'
`radrbench/radrbench-cxr.accuracy.json`.

One row per (model, dataset, task), ranked within each dataset and task by 1/RadCliQ-v1 (higher is better). Each
row's `provenance` says where its numbers come from: `generated` (the maintainers' inference job ran the submitted
model and scored what it wrote), `scored` (the submission's predictions, re-scored by the maintainers' review or
private job) or `imported` (ReXrank's figure as published).

The board ranks what the maintainers made: generated rows, and imported ones (`imported/*.json`, from `rexrank
import-rexrank-csv --out`: no signature, ranked beside the others and marked, as ReXrank's own table mixes them). An
imported file is shown only when it is the official figure this rexrank ships under its name, or the bytes a
maintainer recorded in the ledger; any other is left out and named (whoever merged it: the Hub's button included).
A scored row is self-reported: the predictions are the submitter's, and no check can tell a paraphrased copy of a
public test set's references from a model's reports (the near-copy rule is lexical). It keeps its numbers and CIs,
has no `rank` (SELF_REPORTED_NOTE says why), and `self_rank` ranks it among the self-reported rows (the board's
switch). The maintainers' numbers (generated and scored, both with signatures) share one RadCliQ-v1 signature point
key: the key most rows carry (the newest on a tie) is the board's, and a row made otherwise is listed unranked with
the reason. A submission's result, generated or scored, is ranked only when the ledger holds its file's sha256 (a
maintainers' job wrote exactly those bytes): a submitter's file that claims to be generated is listed unranked,
with the reason. The ledger's word counts only where a maintainers' job signed it (`rexrank.rules.signing`): an
entry merged by the Hub's button is named and ignored.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pandas as pd

from rexrank.board.schema import (
    BOARD,
    COLUMNS,
    METRICS,
    RADRBENCH_BOARD,
    RADRBENCH_COLUMNS,
    RADRBENCH_TYPES,
    RANK_BY,
)
from rexrank.contradictions import withheld
from rexrank.errors import InputError
from rexrank.files import atomic_path, write_text
from rexrank.official import IMPORTED, departures, shipped_problem
from rexrank.radrbench import RADRSCORE_PARTS
from rexrank.results import COMPUTED, SELF_REPORTED, Result, ResultError
from rexrank.rules import ledger
from rexrank.rules.layout import CARD, RADRBENCH_RESULT, SUBMISSIONS
from rexrank.rules.limits import CARD_JSON, RESULT_JSON, parse_json


def _row(result: Result, submission: str | None, card: dict) -> dict:
    # A submission's card names the model (its results carry whatever name they were scored under).
    row = {"submission": submission, "model": card.get("name") or result.model.name,
           "institution": card.get("institution", result.model.institution), "url": card.get("url", result.model.url),
           "paper": card.get("paper", ""), "code": card.get("code", ""), "access": card.get("access", ""),
           "trained_on": ", ".join(map(str, card.get("trained_on") or [])),
           "date": card.get("date") or
           str(result.checks.get("date", "")), "dataset": result.dataset, "split": result.split,
           "task": result.task, "provenance": result.provenance, "rexrank_version": result.rexrank_version,
           "created": result.created,
           "note": str(result.checks.get("note") or "") if result.provenance == "imported" else "",
           # the pages that state an imported model's facts (a submission's card is its own, and names none)
           **{key: str(card.get(key, "")) if result.provenance == "imported" else ""
              for key in ("access_source", "trained_on_source")}}
    for name in METRICS:  # every number the result holds that the board has a column for
        m = result.metrics.get(name)
        row[name] = None if m is None else m.value
        row[f"{name}_low"], row[f"{name}_high"] = (None, None) if m is None else (m.low, m.high)
        row[f"{name}_signature"] = None if m is None or m.signature is None else str(m.signature)
        row[f"{name}_key"] = None if m is None or m.signature is None else m.signature.point_key
        row[f"{name}_departs"] = None if m is None or m.signature is None else "; ".join(departures(m.signature))
    return row


WITHHELD = "withheld until the maintainers review it"


def _withhold(row: dict, held: dict[str, str]) -> dict:
    """A judged value whose verdicts the deterministic metrics contradict, or that none checked, blanked with its CI
    (never shown, never sorted on) and said in the row's note, until a maintainer's review of the file is in the
    ledger (docs/security.md, rule 22). The row keeps its rank by 1/RadCliQ-v1, which no judge makes."""
    if not held:
        return row
    blank = {f"{name}{part}": None for name in held for part in ("", "_low", "_high")}
    note = "; ".join(f"{why}: {WITHHELD}" for why in held.values())
    return row | blank | {"withheld": ", ".join(held), "note": "; ".join(filter(None, (row["note"], note)))}


def _imported_card(result: Result) -> dict:
    """An imported row's card: what `rexrank.official.FACTS` says of its model (access, training data, each with
    its source), as the importer recorded it in `checks.model_facts`; {} when it recorded none or not as text."""
    facts = result.checks.get("model_facts")
    if not isinstance(facts, dict):
        return {}
    card = {key: facts[key] for key in ("access", "access_source", "trained_on_source")
            if isinstance(facts.get(key), str)}
    trained = facts.get("trained_on")
    if isinstance(trained, list) and all(isinstance(t, str) for t in trained):
        card["trained_on"] = trained
    return card


def _head(path: Path, limit: int) -> bytes:
    """The bytes of `path`, refused past `limit` before they are read."""
    with open(path, "rb") as handle:
        if (size := os.fstat(handle.fileno()).st_size) > limit:
            raise InputError(f"{size:,} bytes, more than the {limit:,} allowed")
        return handle.read(limit + 1)


CARD_TEXTS = ("name", "institution", "url", "paper", "code", "access", "date")  # the card fields a row shows
# The files of a submission the board reads (what the aggregate job downloads): each must be as a job left it.
SHOWN = (f"{SUBMISSIONS}/*/{CARD}", f"{SUBMISSIONS}/*/results/*.json", f"{SUBMISSIONS}/*/radrbench/{RADRBENCH_RESULT}")


def _card(repo: Path, folder: Path, unreadable: list[str]) -> dict | None:
    """A submission's card ({} when it has none), or None, with the reason in `unreadable`, when it cannot be read (not
    JSON, not an object, a field of another type): the submission is then left out, not named by its result files."""
    path = folder / CARD
    if not path.is_file():
        return {}
    try:
        card = parse_json(_head(path, CARD_JSON.max_bytes), CARD_JSON)
        if not isinstance(card, dict):
            raise InputError(f"expected a JSON object, got {type(card).__name__}")
        wrong = [f"{key}: expected text, got {type(card[key]).__name__}" for key in CARD_TEXTS
                 if not isinstance(card.get(key, ""), str)]
        trained = card.get("trained_on") or []
        if not isinstance(trained, list) or not all(isinstance(t, str) for t in trained):
            wrong.append("trained_on: expected a list of text")
        if wrong:
            raise InputError("; ".join(wrong))
    except (InputError, OSError) as err:
        unreadable.append(f"{path.relative_to(repo)}: {err}; the submission is left out")
        return None
    return card


def rows(repo: Path, unreadable: list[str], keys: dict[str, bytes] | None = None) -> list[dict]:
    """Every result of the repo: each submission's results (with its card), then the imported rows. A result file
    that cannot be read (another schema version, broken JSON), or a card that cannot (with its submission), is left
    out and named in `unreadable`, so one bad file does not take the board down. A submission's result is ranked only
    when the ledger says a maintainers' job wrote exactly that file; otherwise its row says why not (`unranked`).
    The ledger counts only entries signed by one of `keys` (the configured public keys by default): an entry a
    merged pull request wrote is named in `unreadable`, and what it vouched for is as if it were not there."""
    out = []
    verified = ledger.read_folder(repo, keys)
    unreadable += verified.unreadable

    def read(path: Path) -> Result | None:
        try:
            return Result.read(path)
        except (ResultError, UnicodeDecodeError) as err:
            unreadable.append(str(err) if isinstance(err, ResultError) else f"{path}: not UTF-8 text")
            return None

    for folder in sorted(p for p in (repo / SUBMISSIONS).glob("*") if p.is_dir()):
        if (card := _card(repo, folder, unreadable)) is None:
            continue
        # every file as a maintainers' job left it (a card renamed, a table swapped after the review: none ranked)
        changed = verified.changed_since_review(folder.name, ledger.local_ids(repo, folder), SHOWN)
        moved = changed and (f"{', '.join(p.split('/', 2)[-1] for p in changed[:3])} changed since the maintainers' "
                             "review" + (f" (and {len(changed) - 3} more files)" if len(changed) > 3 else ""))
        for path in sorted((folder / "results").glob("*.json")):
            result = read(path)
            if result is not None and result.provenance in COMPUTED:  # imported rows come from imported/ only
                key, data = path.name.removesuffix(".json"), path.read_bytes()
                why = moved or verified.unverified(folder.name, key, data)
                # the per-study table a comparison may use: the one the verified result names by its hash
                table = None if why else result.companions.get("per_study.parquet")
                held = {} if verified.reviewed(folder.name, key, data) else withheld(result)
                row = _withhold(_row(result, folder.name, card), held)
                out.append(row | {"unranked": why or held.get(RANK_BY), "per_study_sha256": table})
    for path in sorted((repo / IMPORTED).glob("*.json")):
        if (why := _import_problem(path, verified)) is not None:
            unreadable.append(f"{IMPORTED}/{path.name}: {why}; left out of the board (docs/security.md, rule 21)")
        elif (result := read(path)) is not None:
            out.append(_row(result, None, _imported_card(result)) | {"unranked": None})
    return out


def _import_problem(path: Path, verified: ledger.Ledger) -> str | None:
    """None when `imported/<name>` is what the maintainers made, whoever merged it: the official figure this rexrank
    ships under that name, or bytes a maintainer recorded in the ledger (`approve`); else why it is left out. A
    figure neither vouches for is not shown at all: listed, it would read as ReXrank's published number."""
    try:
        data = _head(path, RESULT_JSON.max_bytes)
    except (InputError, OSError) as err:
        return str(err)
    shipped = shipped_problem(path.name, data)
    recorded = shipped and verified.import_problem(path.name, data)
    return recorded and f"{shipped}, and {recorded}"


def ranked_rows(repo: Path, keys: dict[str, bytes] | None = None) -> pd.DataFrame:
    """The repo's results ranked; `attrs["unreadable"]` lists the result files left out and why (`rows`)."""
    unreadable: list[str] = []
    board = rank(pd.DataFrame(rows(repo, unreadable, keys), columns=[*COLUMNS, "unranked"]))
    board.attrs["unreadable"] = unreadable
    return board


SELF_REPORTED_NOTE = "self-reported: the submitter's predictions, re-scored; ranked only among the self-reported"


def rank(frame: pd.DataFrame) -> pd.DataFrame:
    """`rank` (1 = best 1/RadCliQ-v1) of the maintainers' rows within each dataset and task, `self_rank` of the
    self-reported (scored) rows among themselves; `unranked` says why a row has no `rank`."""
    frame = frame.copy()
    frame["rank"] = pd.Series([None] * len(frame), dtype="Int64")
    frame["self_rank"] = pd.Series([None] * len(frame), dtype="Int64")
    frame["unranked"] = frame["unranked"].astype(object) if "unranked" in frame else None  # the ledger's reasons
    for _, group in frame.groupby(["dataset", "task"], sort=False):
        scored = group[group["provenance"].isin(COMPUTED)]  # the maintainers' numbers: one signature key
        keys = Counter(scored[f"{RANK_BY}_key"].dropna())
        board_key = None
        if keys:
            top = max(keys.values())
            tied = [k for k, c in keys.items() if c == top]
            board_key = scored[scored[f"{RANK_BY}_key"].isin(tied)].sort_values("created")[f"{RANK_BY}_key"].iloc[-1]
        for i, row in group.iterrows():
            if isinstance(row["unranked"], str):
                continue  # not verified by the maintainers' jobs: its own reason stands
            if pd.isna(row[RANK_BY]):
                frame.loc[i, "unranked"] = "no 1/RadCliQ-v1"
            elif row["provenance"] in COMPUTED and row[f"{RANK_BY}_key"] != board_key:
                frame.loc[i, "unranked"] = f"RadCliQ-v1 made as {row[f'{RANK_BY}_key']}, the board's is {board_key}"
        rankable = frame.loc[group.index[frame.loc[group.index, "unranked"].isna()]]
        own = rankable["provenance"] == SELF_REPORTED
        for column, rows in (("rank", rankable[~own]), ("self_rank", rankable[own])):
            frame.loc[rows.index, column] = rows[RANK_BY].rank(ascending=False, method="min").astype("Int64")
        frame.loc[rankable.index[own], "unranked"] = SELF_REPORTED_NOTE
    return frame.sort_values(["dataset", "task", "rank"], na_position="last").reset_index(drop=True)


def radrbench_rows(repo: Path) -> pd.DataFrame:
    """Every submission's RadRBench-CXR rows (the model named by its card), in RADRBENCH_COLUMNS. A result file (or
    card) that cannot be read, or is not what `rexrank score-radrbench` writes (`rules.check_radrbench`: no rows, a
    number outside its CI...), is left out and named in `attrs["unreadable"]`."""
    from rexrank.rules.limits import RADRBENCH_JSON
    from rexrank.rules.radrbench import check_radrbench

    out, unreadable = [], []
    for folder in sorted(p for p in (repo / SUBMISSIONS).glob("*") if p.is_dir()):
        path = folder / "radrbench" / RADRBENCH_RESULT
        if not path.is_file() or (card := _card(repo, folder, unreadable)) is None:
            continue
        try:
            result = check_radrbench(_head(path, RADRBENCH_JSON.max_bytes))
        except (InputError, OSError) as err:
            unreadable.append(f"{path.relative_to(repo)}: {err}; left out of the RadRBench-CXR board")
            continue
        judged = result.get("radrscore") or {}
        reasoning = {(r["source"], r["task"]): r for r in judged.get("rows", [])}
        free = result.get("ratescore") or {}
        free_text = {(r["source"], r["task"]): r for r in free.get("rows", [])}
        for row in result["rows"]:
            scored = reasoning.get((row["source"], row["task"]))
            rate = free_text.get((row["source"], row["task"]))
            out.append({"submission": folder.name, "model": card.get("name") or result["model"],
                        "institution": card.get("institution", ""), "url": card.get("url", ""),
                        "date": card.get("date", ""), **{k: row[k] for k in RADRBENCH_COLUMNS[5:13]},
                        "missing_outputs": result["missing_outputs"], "signature": result["signature"],
                        **({} if scored is None else _radrscore_cells(scored, judged["signature"])),
                        **({} if rate is None else {"ratescore": rate["ratescore"], "ratescore_low": rate["low"],
                                                    "ratescore_high": rate["high"],
                                                    "ratescore_signature": free["signature"]})})
    frame = pd.DataFrame(out, columns=list(RADRBENCH_COLUMNS))
    frame = frame.astype(RADRBENCH_TYPES).sort_values(["source", "task", "accuracy"], ascending=[True, True, False],
                                                      ignore_index=True)
    frame.attrs["unreadable"] = unreadable
    return frame


def _radrscore_cells(row: dict, signature: str) -> dict:
    """A RadRScore row of `radrbench-cxr.accuracy.json` as board cells (its items: those whose replies were read)."""
    cells = {f"{part}{end}": row[f"{part}{end}"] for part in RADRSCORE_PARTS for end in ("", "_low", "_high")}
    return {**cells, "radrscore_items": row["radrscore_n"], "radrscore_signature": signature}


CARD_TEXT = """---
pretty_name: rexrank leaderboard results
license: other
tags:
- rexrank
- radiology
- report-generation
- leaderboard
configs:
- config_name: default
  data_files:
  - split: leaderboard
    path: leaderboard.parquet
- config_name: radrbench
  data_files:
  - split: leaderboard
    path: radrbench.parquet
---

# rexrank results

The leaderboard of AI-generated chest X-ray reports: one row per model, dataset and task, ranked by 1/RadCliQ-v1
within each dataset and task; `provenance` says where a row's numbers come from: `generated` (the maintainers ran the
submitted model and scored the reports it wrote), `scored` (the submitted predictions, re-scored by the maintainers;
both with CIs and signatures) or `imported` (ReXrank's official table, as published). Submissions live under
`submissions/<id>/` (results, per-study scores and predictions of the public test sets); `rexrank submit` opens a
pull request adding one.

```python
from datasets import load_dataset
board = load_dataset("ORG/results", split="leaderboard")
radrbench = load_dataset("ORG/results", "radrbench", split="leaderboard")  # RadRBench-CXR accuracy per task
```

`radrbench.parquet`: RadRBench-CXR accuracy of each submission that carries
`submissions/<id>/radrbench/radrbench-cxr.accuracy.json` (`rexrank score-radrbench`), one row per source and task
plus an `all` row, with a 95% bootstrap CI and the scoring signature; where the submission was judged, RadRScore
and its components Rc, Rf, Re (`completeness`, `factuality`, `effectiveness`) with CIs over every item (one whose
replies could not be read counts 0; `radrscore_items` were read), and the judge's signature; and for the free-text
task (`multi_no_option`), where the submission carries it, RaTEScore of its answers against the reference answers
(`ratescore`, with its CI and signature), as ChestX-Reasoner scores that task, beside exact-match accuracy.
"""


def aggregate(repo: str | Path, keys: dict[str, bytes] | None = None) -> pd.DataFrame:
    """Rebuild `leaderboard.parquet` and the repo card from what is merged; the ranked rows (`attrs["unreadable"]`:
    the result files left out, each with its reason). `keys`: the ledger's public keys (`rows`)."""
    repo = Path(repo)
    board = ranked_rows(repo, keys)
    radrbench = radrbench_rows(repo)
    board.attrs["unreadable"] += [p for p in radrbench.attrs["unreadable"] if p not in board.attrs["unreadable"]]
    with atomic_path(repo / BOARD) as tmp:
        board.to_parquet(tmp, index=False)
    with atomic_path(repo / RADRBENCH_BOARD) as tmp:
        radrbench.to_parquet(tmp, index=False)
    write_text(repo / "README.md", CARD_TEXT)
    return board


def aggregate_hub(repo_id: str, token: str | None = None) -> tuple[pd.DataFrame, str]:
    """The aggregate job on a Hub results repo: read main, rebuild the board, commit it to main (a maintainer's
    token). Returns the board and the commit's URL."""
    import tempfile

    from huggingface_hub import HfApi, snapshot_download

    with tempfile.TemporaryDirectory(prefix="rexrank-aggregate-") as tmp:
        local = Path(snapshot_download(repo_id, repo_type="dataset", token=token, local_dir=Path(tmp) / "repo",
                                       allow_patterns=[*SHOWN, f"{IMPORTED}/*.json", f"{ledger.LEDGER}/**"]))
        board = aggregate(local)
        commit = HfApi(token=token).upload_folder(
            folder_path=str(local), repo_id=repo_id, repo_type="dataset",
            allow_patterns=[BOARD, RADRBENCH_BOARD, "README.md"],
            commit_message=f"Aggregate: {int(board['rank'].notna().sum())} ranked rows of {len(board)}")
    return board, commit.commit_url
