"""What a code submission holds: `model/` beside the results, as ReXrank's organisers take it (rajpurkarlab/ReXrank
`example_files/submission_tutorial_round2.md`: an environment file and `python inference.py --input_json_file X
--save_json_file Y --img_root_dir Z`; round 1 took the same three positionally), with the weights named as pinned
Hub repositories so that nothing is fetched once the script runs.

    model/model.yaml          weights (Hub repos pinned to 40-hex commits), serves (ReXrank's words: RRG, VQA or
                              both; RRG when absent), tasks (the report tasks of RRG), images (multi | single),
                              gpu_memory_gb, and how it is run (runner: inference.py | transformers | vllm; cli:
                              flags | positional)
    model/inference.py        ReXrank's CLI (not needed with `runner: transformers` or `vllm`: rexrank's runners)
    model/requirements.txt    or model/environment.yaml: what the script needs beyond the job image
    model/...                 the script's own modules and small configs (text files only)

The contract for submitters is docs/submitting.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import VQA_PRIVATE, VQA_TASK
from rexrank.errors import InputError
from rexrank.reports import TASKS

MODEL_FOLDER = "model"
CARD = "model.yaml"
SCRIPT = "inference.py"
ENVIRONMENTS = ("requirements.txt", "environment.yaml")
RUNNERS = ("inference.py", "transformers", "vllm")
REXRANK_RUNNERS = {"transformers": "rexrank.inference.hf_runner", "vllm": "rexrank.inference.vllm_runner"}
CLIS = ("flags", "positional")
IMAGES = ("multi", "single")
# What the folder may hold: the script's code and small text configs; weights go to the Hub, pinned.
TEXT_SUFFIXES = (".py", ".yaml", ".yml", ".txt", ".json", ".cfg", ".toml", ".md", ".sh", ".jinja")
MAX_FILES = 200
MAX_FILE_BYTES = 1024 * 1024
MAX_TOTAL_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 8
MAX_WEIGHTS = 8
MAX_GPU_MEMORY_GB = 141  # one H200: a study is run on one GPU
MAX_YAML_BYTES = 64 * 1024  # model.yaml and environment.yaml: a few hundred bytes each
MAX_YAML_DEPTH = 16  # model.yaml's weights list of mappings is 3 levels
_REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.-]{0,95}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_FIELDS = {"weights", "serves", "tasks", "images", "gpu_memory_gb", "runner", "cli", "name"}
# The tracks a submission serves, in ReXrank's words (its tutorial: "which task(s) your model is designed for (RRG,
# VQA, or both)"); a model.yaml without `serves` is RRG, as every one written before the VQA track.
RRG, VQA = "RRG", "VQA"
TRACKS = (RRG, VQA)
# A VQA run's size in units of one report task's private run (10,000 studies): the private set's questions per study
VQA_RUN = VQA_PRIVATE["questions"] / VQA_PRIVATE["studies"]


@dataclass(frozen=True)
class Weights:
    repo: str
    revision: str  # a 40-hex commit


@dataclass(frozen=True)
class Model:
    """A checked `model/` folder."""

    folder: Path
    weights: tuple[Weights, ...]
    tasks: tuple[str, ...]  # the report tasks (RRG's); empty for a VQA-only model
    images: str
    gpu_memory_gb: float
    runner: str
    cli: str
    serves: tuple[str, ...] = (RRG,)

    @property
    def uses_rexrank_runner(self) -> bool:
        return self.runner in REXRANK_RUNNERS

    @property
    def vqa(self) -> bool:
        return VQA in self.serves

    @property
    def runs(self) -> tuple[str, ...]:
        """Every task the job runs it on: its report tasks, then the VQA task where it serves VQA."""
        return self.tasks + ((VQA_TASK,) if self.vqa else ())

    @property
    def private_load(self) -> float:
        """Its private runs' size, in units of one report task on the private set's studies (the bill's unit)."""
        return len(self.tasks) + (VQA_RUN if self.vqa else 0.0)

    def command(self, input_json: str, save_json: str, image_root: str, python: str = "python") -> list[str]:
        """The command the sandbox runs (its paths as the sandbox shows them), in the CLI form the script takes
        (rexrank's runner takes both)."""
        if self.uses_rexrank_runner:
            return [python, "-m", REXRANK_RUNNERS[self.runner], "--input_json_file", input_json,
                    "--save_json_file", save_json, "--img_root_dir", image_root]
        script = f"/submission/{SCRIPT}"  # where the sandbox shows the folder
        if self.cli == "positional":
            return [python, script, input_json, save_json, image_root]
        return [python, script, "--input_json_file", input_json, "--save_json_file", save_json,
                "--img_root_dir", image_root]


def _problem(where: str, text: str) -> InputError:
    return InputError(f"{where}: {text}")


def check_model(folder: str | Path) -> Model:
    """`folder` (a submission's `model/`, or a folder holding one) checked as the contract says; InputError naming
    every problem otherwise."""
    folder = Path(folder)
    if (folder / MODEL_FOLDER / CARD).is_file() and not (folder / CARD).is_file():
        folder = folder / MODEL_FOLDER
    problems = file_problems(folder)
    card_path = folder / CARD
    if not card_path.is_file():
        raise _problem(str(folder), f"no {CARD} (the weights as pinned Hub repos, the tasks, the images, the GPU "
                                    "memory): see docs/submitting.md")
    try:
        model = read_card(card_path.read_bytes(), folder)
    except InputError as err:
        problems.append(f"{CARD}: {err}")
        model = None
    if model is not None and not model.uses_rexrank_runner and not (folder / SCRIPT).is_file():
        problems.append(f"no {SCRIPT}: ReXrank's CLI (`python inference.py --input_json_file X --save_json_file Y "
                        "--img_root_dir Z`), or `runner: transformers` (or `vllm`) in model.yaml for a standard "
                        "transformers image-text-to-text model")
    if model is not None and not model.uses_rexrank_runner and not any((folder / e).is_file() for e in ENVIRONMENTS):
        problems.append(f"no {' or '.join(ENVIRONMENTS)}: what the script needs beyond the job image")
    if problems:
        raise InputError(f"{folder}: not a code submission:\n" + "\n".join(f"  - {p}" for p in problems[:20]))
    return model


def files(folder: Path) -> list[Path]:
    """The files a submission's folder ships: every file but hidden ones (.git, .gitignore), links included so that
    `file_problems` can refuse them."""
    return [p for p in sorted(folder.rglob("*")) if not any(part.startswith(".") for part in
                                                            p.relative_to(folder).parts)
            and (p.is_symlink() or p.is_file())]


def file_problems(folder: Path) -> list[str]:
    """What the folder may not hold: anything but small text files, links, too many or too deep."""
    if not folder.is_dir():
        return [f"{folder} is not a folder"]
    problems, total = [], 0
    shipped = files(folder)
    for path in shipped:
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            problems.append(f"{rel}: a link (the folder holds files only)")
            continue
        size = path.stat().st_size
        total += size
        if rel.count("/") >= MAX_DEPTH:
            problems.append(f"{rel}: deeper than {MAX_DEPTH} folders")
        if path.suffix.lower() not in TEXT_SUFFIXES:
            problems.append(f"{rel}: not code or a text config ({', '.join(TEXT_SUFFIXES)}); weights and data go to "
                            "the Hub, pinned in model.yaml")
        elif size > MAX_FILE_BYTES:
            problems.append(f"{rel}: {size:,} bytes, more than {MAX_FILE_BYTES:,}")
    if len(shipped) > MAX_FILES:
        problems.append(f"{len(shipped)} files, more than {MAX_FILES}")
    if total > MAX_TOTAL_BYTES:
        problems.append(f"{total:,} bytes in all, more than {MAX_TOTAL_BYTES:,}")
    return problems


def safe_yaml(data: bytes, where: str = CARD) -> object:
    """A submitted YAML file's bytes, read with limits: at most MAX_YAML_BYTES, no tags (the safe loader), no aliases
    (a 1 KB file of nested aliases expands to billions of nodes when walked), at most MAX_YAML_DEPTH levels (20,000
    open brackets end in RecursionError). InputError in one line otherwise."""
    import yaml

    if len(data) > MAX_YAML_BYTES:
        raise InputError(f"{len(data):,} bytes, more than {MAX_YAML_BYTES // 1024} KiB")

    class Bounded(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(None, None, "an alias (*name): not read in submitted YAML",
                                                  self.peek_event().start_mark)
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(None, None, f"deeper than {MAX_YAML_DEPTH} levels",
                                                      self.peek_event().start_mark)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    try:
        loader = Bounded(data.decode("utf-8"))
        try:
            return loader.get_single_data()
        finally:
            loader.dispose()
    except (UnicodeDecodeError, yaml.YAMLError) as err:
        mark = getattr(err, "problem_mark", None)
        said = " ".join(str(getattr(err, "problem", None) or err).split())[:120]
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise InputError(f"{where}: not YAML as rexrank reads it ({said}{at})") from None


def read_card(data: bytes, folder: Path) -> Model:
    """model.yaml's bytes read safely (safe_yaml) and checked."""
    try:
        card = safe_yaml(data)
    except InputError as err:
        raise InputError(str(err).removeprefix(f"{CARD}: ")) from None
    if not isinstance(card, dict):
        raise InputError(f"expected a mapping of {', '.join(sorted(_FIELDS))}")
    unknown = sorted(map(str, set(card) - _FIELDS))
    problems = [f"unknown field {k!r} (known: {', '.join(sorted(_FIELDS))})" for k in unknown[:5]]
    runner = card.get("runner", "inference.py")
    if runner not in RUNNERS:
        problems.append(f"runner {runner!r}: expected one of {', '.join(RUNNERS)}")
    weights = []
    listed = card.get("weights")
    if not isinstance(listed, list) or not 1 <= len(listed) <= MAX_WEIGHTS:
        problems.append(f"weights: a list of 1 to {MAX_WEIGHTS} entries {{repo: ORG/NAME, revision: 40-hex commit}}")
        listed = []
    for i, entry in enumerate(listed):
        if not isinstance(entry, dict) or set(entry) != {"repo", "revision"}:
            problems.append(f"weights[{i}]: expected {{repo: ORG/NAME, revision: 40-hex commit}}")
            continue
        repo, revision = entry["repo"], entry["revision"]
        if not isinstance(repo, str) or not _REPO.fullmatch(repo) or ".." in repo:
            problems.append(f"weights[{i}].repo: {str(repo)[:60]!r} is not a Hub repo id ORG/NAME")
        if not isinstance(revision, str) or not _COMMIT.fullmatch(revision):
            problems.append(f"weights[{i}].revision: {str(revision)[:60]!r} is not a 40-hex commit (a branch or a "
                            "tag can move: pin the commit)")
        weights.append(Weights(str(repo), str(revision)))
    serves = _serves(card, runner, problems)
    tasks = card.get("tasks", [] if RRG not in serves else None)
    if isinstance(tasks, str):
        tasks = [tasks]
    if RRG not in serves and tasks:
        problems.append(f"tasks: report tasks, but serves says {' and '.join(serves)} only (add RRG to serves, or "
                        "leave tasks out)")
    elif not isinstance(tasks, list) or (RRG in serves and not tasks) or any(t not in TASKS for t in tasks) \
            or len(set(tasks)) < len(tasks):
        problems.append(f"tasks: a list of {', '.join(TASKS)} (each at most once), the report tasks RRG runs")
        tasks = []
    images = card.get("images", "multi")
    if images not in IMAGES:
        problems.append(f"images {images!r}: expected multi (every image of a study) or single (its key image)")
    memory = card.get("gpu_memory_gb")
    if isinstance(memory, bool) or not isinstance(memory, int | float) or not 0 < memory <= MAX_GPU_MEMORY_GB:
        problems.append(f"gpu_memory_gb: the GPU memory one process needs, a number from 1 to {MAX_GPU_MEMORY_GB}")
        memory = 0
    cli = card.get("cli")
    if cli is None:
        cli = cli_of(folder / SCRIPT) if runner == "inference.py" else "flags"
    elif cli not in CLIS:
        problems.append(f"cli {cli!r}: expected flags (--input_json_file ...) or positional (round 1)")
    if problems:
        raise InputError("; ".join(problems))
    return Model(folder, tuple(weights), tuple(tasks), images, float(memory), runner, cli, serves)


def _serves(card: dict, runner: object, problems: list[str]) -> tuple[str, ...]:
    """`serves` as ReXrank's tutorial words it (RRG, VQA or both; RRG when absent), in TRACKS' order."""
    serves = card.get("serves", [RRG])
    if isinstance(serves, str):
        serves = [serves]
    if not isinstance(serves, list) or not serves or any(s not in TRACKS for s in serves) \
            or len(set(serves)) < len(serves):
        problems.append(f"serves: {str(card.get('serves'))[:60]!r}: expected {RRG}, {VQA} or both, as ReXrank's "
                        "submission tutorial names the tasks (each at most once)")
        return (RRG,)
    if VQA in serves and runner in REXRANK_RUNNERS:
        problems.append(f"serves {VQA} with runner {runner}: rexrank's runners write reports; a VQA model runs its "
                        f"own {SCRIPT}")
    return tuple(t for t in TRACKS if t in serves)


def cli_of(script: Path) -> str:
    """Which form of ReXrank's CLI a script takes: the flags of round 2 when it names them, else positional."""
    try:
        text = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "flags"
    return "flags" if "--input_json_file" in text or "input_json_file" in text else "positional"
