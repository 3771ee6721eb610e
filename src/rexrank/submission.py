"""A submission to the results repo: what it holds, how it is put together from `rexrank score` outputs, and
how it is sent (a pull request to the results repo on the Hub).

The results repo (a Hub dataset repo, or a local folder):

    README.md, leaderboard.parquet                 written by the maintainers' aggregate job only
    submissions/<id>/submission.json               the model card stub (`ModelCard`)
    submissions/<id>/results/<dataset>.<task>.json          rexrank result JSON
    submissions/<id>/per_study/<dataset>.<task>.parquet     per-study scores (public datasets only)
    submissions/<id>/predictions/<dataset>.<task>.jsonl     the predictions scored (every dataset)
    submissions/<id>/radrbench/radrbench-cxr.accuracy.json  RadRBench-CXR accuracy (`rexrank score-radrbench`)

For the private ReXGradient set a submission carries predictions only: the maintainers' gated job scores them
and adds the aggregate result.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rexrank import __version__
from rexrank.catalog import DATASETS, PRIVATE_DATASETS, PUBLIC_DATASETS, TEST_SETS
from rexrank.data.known import recognise
from rexrank.data.split import jsonl_records, listing
from rexrank.errors import InputError
from rexrank.models import hub_failure, unreachable_hub
from rexrank.reports import REFERENCE_TEXT, TASKS, text_settings
from rexrank.results import Result, companions, result_name, results_by_model
from rexrank.rules.layout import CARD, RADRBENCH_RESULT, SUBMISSION_ID, SUBMISSIONS
from rexrank.scorers import METRICS, spec
from rexrank.submission_plan import Piece, board_plan


@dataclass(frozen=True)
class ModelCard:
    name: str
    institution: str = ""
    url: str = ""
    paper: str = ""
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d"))
    code: str = ""  # a link to the model's code
    access: str = ""  # ACCESS: open-weights or api; "" unknown
    trained_on: tuple[str, ...] = ()
    contact: str = ""

    @property
    def submission_id(self) -> str:
        """`my-org-my-model`: institution and name, lower case, runs of other characters as one hyphen."""
        slug = re.sub(r"[^a-z0-9]+", "-", f"{self.institution} {self.name}".lower()).strip("-")[:64].strip("-")
        if not SUBMISSION_ID.match(slug):
            raise InputError(f"cannot make a submission id from name {self.name!r} and institution "
                             f"{self.institution!r}: give a name with letters or digits")
        return slug

    def to_dict(self) -> dict:
        return asdict(self) | {"trained_on": list(self.trained_on)}


def collect(results_dir: Path, model_name: str | None = None) -> list[Piece]:
    """The pieces `rexrank score --out results_dir` wrote for one model (`model_name`, needed when the folder holds
    several): results, per-study tables and predictions, checked.

    Every result must be one of rexrank's datasets and tasks, carry the metric versions of this rexrank, and come
    with the predictions it scored (each study once, as many as it scored); private datasets contribute their
    predictions only."""
    if not results_dir.is_dir():
        raise InputError(f"{results_dir}: no such folder (the --out of rexrank score)")
    pieces, problems = _radrbench_piece(results_dir)
    seen: dict[tuple[str, str], str] = {}
    for path, result in _one_model(results_dir, model_name):
        dataset, task, _ = result_name(path.name)
        if dataset not in DATASETS and (sample := _sample_of(dataset)):
            problems.append(f"{path.name}: scored on a sample or an altered copy of the official {sample} split "
                            "(rexrank score names it so): the leaderboard ranks the whole split; score all of it")
            continue
        if dataset not in DATASETS:
            problems.append(f"{path.name}: not <dataset>.<task>.<model>.json for a rexrank dataset "
                            f"({', '.join(DATASETS)}); score with --dataset-name set to one of them")
            continue
        if (dataset, task) in seen:
            problems.append(f"{path.name} and {seen[dataset, task]}: two results of {result.model.name!r} on "
                            f"{dataset} {task}; remove the one not to send")
            continue
        seen[dataset, task] = path.name
        table, predictions = companions(path)
        if not predictions.is_file():
            problems.append(f"{path.name}: {predictions.name} is missing (re-score with this rexrank)")
            continue
        problems += _check_result(path.name, result, predictions)
        problems += _split_problems(path.name, dataset, result, predictions)
        if dataset in PRIVATE_DATASETS:
            problems += _one_set(path.name, result, [predictions])
            pieces.append(Piece(f"predictions/{dataset}.{task}.jsonl", predictions))
            continue
        if not table.is_file():
            problems.append(f"{path.name}: {table.name} is missing")
            continue
        problems += _one_set(path.name, result, [table, predictions])
        pieces += [Piece(f"results/{dataset}.{task}.json", path), Piece(f"per_study/{dataset}.{task}.parquet", table),
                   Piece(f"predictions/{dataset}.{task}.jsonl", predictions)]
    if problems:
        raise InputError(f"{results_dir}: not ready to submit:\n{listing(problems, 20)}")
    if not pieces:
        raise InputError(f"{results_dir}: no result of a rexrank dataset here; run rexrank score --out {results_dir} "
                         f"--dataset-name <{'|'.join(PUBLIC_DATASETS)}> (or rexrank score-radrbench --out "
                         f"{results_dir}) first")
    return pieces


def _one_model(results_dir: Path, model_name: str | None) -> list[tuple[Path, Result]]:
    """The results of one model in an --out folder that may hold several (`rexrank.results.result_paths`)."""
    models = results_by_model(results_dir)
    if model_name is not None and model_name not in models:
        raise InputError(f"{results_dir}: no result of a model named {model_name!r}; it holds "
                         + (", ".join(map(repr, models)) or "none"))
    if model_name is None and len(models) > 1:
        raise InputError(f"{results_dir}: results of {len(models)} models ({', '.join(map(repr, models))}): choose "
                         "the one to send with --model-name NAME (the name rexrank score recorded)")
    return models[model_name] if model_name is not None else next(iter(models.values()), [])


def _sample_of(dataset: str) -> str | None:
    """The official test set a result's dataset name says it is a sample of (`mimic-cxr-sample`)."""
    base = next((dataset.removesuffix(end) for end in ("-sample", "-unofficial") if dataset.endswith(end)), None)
    return f"{TEST_SETS[base].title} {TEST_SETS[base].split}" if base in TEST_SETS else None


def _split_problems(name: str, dataset: str, result: Result, predictions: Path) -> list[str]:
    """A result for a test set must be of the split the leaderboard ranks; and where its predictions carry any of an
    official split's study ids (real data, not a synthetic stand-in, which the review's own copy of the split will
    not line up with), of every study of that split and no other (`rexrank.data.known`)."""
    test_set = TEST_SETS[dataset]
    if result.split != test_set.split:
        return [f"{name}: scored on the {result.split} split; the leaderboard ranks {test_set.title} {test_set.split}"]
    match = recognise(str(record.get("study_id")) for _, record in jsonl_records(predictions))
    if match is None:
        return []
    if (match.dataset, match.split) != (dataset, test_set.split):
        return [f"{name}: its study ids are {match.describe()}, not {test_set.title}'s: re-score with the right "
                "--dataset"]
    studies = result.counts.get("split_studies")
    if not match.subset or studies != match.official:
        size = f"{studies:,}" if isinstance(studies, int) else "an unknown number of"
        return [f"{name}: scored on a split of {size} studies that is not the official {match.title} split "
                f"({match.official:,} studies, {match.shared:,} of them predicted here): a sample or an altered copy; "
                "the leaderboard ranks the whole split: score all of it"]
    return []




def _radrbench_piece(results_dir: Path) -> tuple[list[Piece], list[str]]:
    """`radrbench-cxr.accuracy.json` from `rexrank score-radrbench --out results_dir` (or its `radrbench/`
    subfolder), checked as the maintainers will, and made by this rexrank's answer parser."""
    from rexrank.radrbench.answers import signature
    from rexrank.rules import RADRBENCH_FILE, check_radrbench

    found = [p for p in (results_dir / RADRBENCH_RESULT, results_dir / "radrbench" / RADRBENCH_RESULT) if p.is_file()]
    if not found:
        return [], []
    if len(found) > 1:
        return [], [f"{RADRBENCH_RESULT}: both {found[0]} and {found[1]}; keep the one to submit"]
    path = found[0]
    try:
        value = check_radrbench(path.read_bytes())
    except InputError as err:
        return [], [f"{path.relative_to(results_dir)}: {err}"]
    current = str(signature()).split("|rexrank:")[0]
    made = value["signature"].split("|boot:")[0].split("|rexrank:")[0]
    if made != current:
        return [], [f"{path.relative_to(results_dir)}: made as {made}, this rexrank scores as {current}: re-score "
                    "with rexrank score-radrbench"]
    return [Piece(RADRBENCH_FILE, path)], []


def _text_made(signature, task: str) -> str | None:
    """How the texts a number was made on differ from what this rexrank scores for `task` (docs/metrics.md §0), in
    words; None when they do not."""
    current = text_settings(task)
    found = {key: signature.settings.get(key) for key in current}
    if found == current:
        return None
    if found["refs"] is None:
        return f"references with their whitespace as stored (this rexrank scores refs:{REFERENCE_TEXT})"
    return ", ".join(f"{key} {found[key]} (this rexrank's: {value})" for key, value in current.items()
                     if found[key] != value)


def _check_result(name: str, result: Result, predictions: Path) -> list[str]:
    problems = []
    if result.provenance == "generated":  # the inference job's, made by running the model: never submitted
        problems.append(f"{name}: a generated result is written by the maintainers' inference job, which runs the "
                        "submitted model; a submission carries results rexrank score wrote")
    elif result.provenance != "scored":
        problems.append(f"{name}: an imported result cannot be submitted")
    if unpredicted := result.counts.get("unpredicted"):
        problems.append(f"{name}: partial (rexrank score --partial: {unpredicted:,} of the split's studies have no "
                        "prediction); the leaderboard ranks the whole split: score all of it")
    for metric, value in result.metrics.items():
        if metric not in METRICS:
            problems.append(f"{name}: unknown metric {metric!r} (known: {', '.join(METRICS)})")
            continue
        current = spec(metric).version
        if value.signature is None or value.signature.version != current:
            found = value.signature.version if value.signature else "none"
            problems.append(f"{name}: {metric} was made by version {found}, this rexrank's is {current}: re-score")
        elif result.task in TASKS and (made := _text_made(value.signature, result.task)):
            problems.append(f"{name}: {metric} was made on {made}: re-score")
    seen: set[str] = set()
    for number, record in jsonl_records(predictions):
        study = record.get("study_id")
        if study in seen:
            problems.append(f"{predictions.name}:{number}: study {study} predicted twice")
        seen.add(study)
    if len(seen) != result.counts.get("scored", len(seen)):
        problems.append(f"{predictions.name}: {len(seen)} predictions, but the result scored "
                        f"{result.counts.get('scored')} studies")
    return problems


def _one_set(name: str, result: Result, files: list[Path]) -> list[str]:
    """The result's files are the ones it was written with (its `companions` hashes): a run killed between writes,
    or a file replaced by hand, leaves a set whose parts disagree."""
    from rexrank.files import file_sha256

    problems = []
    for path in files:
        kind = path.name.removeprefix(name.removesuffix(".json") + ".")  # per_study.parquet, predictions.jsonl
        recorded = result.companions.get(kind)
        if recorded is None:
            problems.append(f"{name}: does not record {path.name}'s hash (written by an older rexrank): re-score")
        elif recorded != file_sha256(path):
            problems.append(f"{name}: {path.name} is not the file scored with it (a run stopped between writes, or "
                            "a file replaced): re-score")
    return problems


def private_predictions(path: Path, dataset: str, task: str, into: Path) -> Piece:
    """Predictions for a private test set (scored by the maintainers' gated job), checked and written as JSONL."""
    from rexrank.data.predictions import load_predictions

    if dataset not in PRIVATE_DATASETS or task not in TASKS:
        raise InputError(f"{dataset}.{task}: private predictions are for {', '.join(PRIVATE_DATASETS)} and a task "
                         f"of {', '.join(TASKS)}")
    predictions = load_predictions(path)
    bad = [f"study {s}: prediction is {type(p).__name__}, not text" for s, p in predictions.items()
           if not isinstance(p, str)]
    if bad:
        raise InputError(f"{path}: {len(bad)} problem(s):\n{listing(bad)}")
    from rexrank.data.predictions import write_predictions

    target = into / f"{dataset}.{task}.predictions.jsonl"
    write_predictions(target, list(predictions), list(predictions.values()))
    return Piece(f"predictions/{dataset}.{task}.jsonl", target)


def prepare(card: ModelCard, pieces: list[Piece], into: Path) -> Path:
    """The submission folder `into/<id>/`: the card and the pieces in the repo layout."""
    folder = into / card.submission_id
    for piece in pieces:
        target = folder / piece.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(piece.source, target)
    card_data = card.to_dict() | {"rexrank": __version__}
    (folder / CARD).write_text(json.dumps(card_data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return folder


def model_pieces(folder: Path) -> list[Piece]:
    """A code submission's model/ folder (docs/submitting.md), checked against the contract first, then its
    requirements by the validator the job's fetch sandbox runs (the files only: pip and conda do not run here)."""
    from rexrank.inference.contract import MODEL_FOLDER, check_model, files
    from rexrank.inference.requirements import BuildFailed, check

    model = check_model(folder)
    try:
        check(model.folder)
    except BuildFailed as err:
        raise InputError(f"{str(folder).rstrip('/')}/{err}; the maintainers' job would refuse it: nothing was sent") \
            from None
    return [Piece(f"{MODEL_FOLDER}/{p.relative_to(model.folder).as_posix()}", p) for p in files(model.folder)]


def submit(card: ModelCard, results_dir: Path, repo_id: str, private: dict[tuple[str, str], Path] | None = None,
           dry_run: bool = False, token: str | None = None, model: Path | None = None, model_name: str | None = None
           ) -> tuple[list[tuple[str, int]], str | None, list[str]]:
    """Check the results, then open a pull request adding `submissions/<id>/` to `repo_id` (a Hub dataset repo).
    `private`: (dataset, task) -> predictions file for the private sets; `model`: a code submission's model/ folder,
    which the maintainers run; `model_name`: whose results to send from a folder holding several. Returns the files
    (repo path, bytes), the pull request's URL (None on a dry run) and what the board will do with each piece
    (`board_plan`)."""
    pieces = collect(results_dir, model_name) if results_dir else []
    pieces += model_pieces(model) if model else []
    with tempfile.TemporaryDirectory(prefix="rexrank-submit-") as tmp:
        pieces += [private_predictions(path, *key, Path(tmp)) for key, path in (private or {}).items()]
        if not pieces:
            raise InputError("nothing to submit: give --results (the --out of rexrank score), --model (a code "
                             "submission) and/or --private")
        plan = board_plan(pieces)
        root = Path(tmp) / "repo"
        folder = prepare(card, pieces, root / SUBMISSIONS)
        from rexrank.rules import check_submission

        check_submission(root, card.submission_id)  # the maintainers' checks, before anything leaves this machine
        prefix = f"{SUBMISSIONS}/{card.submission_id}"
        files = [(f"{prefix}/{p.relative_to(folder).as_posix()}", p.stat().st_size)
                 for p in sorted(folder.rglob("*")) if p.is_file()]
        if dry_run:
            return files, None, plan
        if (host := unreachable_hub()) is not None:  # else each request retries for seconds before failing
            raise InputError(f"{repo_id}: the Hub ({host}) cannot be reached from here (its name does not resolve): "
                             "nothing was sent; submit again where there is network (--dry-run checks all offline)")
        try:
            return files, _pull_request(card, folder, prefix, repo_id, token, pieces, len(files)), plan
        except Exception as err:
            if (why := hub_failure(err)) is None:
                raise
            raise InputError(f"{repo_id}: {why}: not submitted (nothing left open); run the same command again") \
                from None


def _pull_request(card: ModelCard, folder: Path, prefix: str, repo_id: str, token: str | None, pieces: list[Piece],
                  count: int) -> str:
    """Open a pull request adding `folder` as `prefix`; its URL. An upload that did not finish closes it."""
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    title = f"Submit {card.name}" + (f" ({card.institution})" if card.institution else "")
    datasets = ", ".join(sorted({p.path.split("/")[1].split(".")[0] for p in pieces}))
    pr = api.create_pull_request(repo_id, title, description=f"{count} files from rexrank {__version__}; "
                                 f"datasets: {datasets}", repo_type="dataset")
    try:
        api.upload_folder(folder_path=str(folder), path_in_repo=prefix, repo_id=repo_id, repo_type="dataset",
                          revision=pr.git_reference, commit_message=title)
    except BaseException:  # the upload did not finish: close the empty pull request, so a retry starts clean
        with contextlib.suppress(Exception):  # the Hub may be unreachable for this too: the upload's error wins
            api.change_discussion_status(repo_id, pr.num, "closed", repo_type="dataset",
                                         comment="The upload did not finish; closed by rexrank submit.")
        raise
    # Made through the API, the pull request is a draft the maintainers cannot merge until it is published.
    api.change_discussion_status(repo_id, pr.num, "open", repo_type="dataset",
                                 comment=f"Submitted with rexrank {__version__}.")
    return pr.url
