"""Where the inference job runs: an HF Job (`HfApi.run_job`) on a GPU flavor, started for a pull request that
carries a code submission, or the same command on the maintainers' own GPU machine.

The job's image is `leaderboard_sync/job/Dockerfile` (CUDA, PyTorch, Debian's bubblewrap and rexrank), pushed as a
Docker Space whose image the job names (`REXRANK_JOB_IMAGE`, e.g. `hf.co/spaces/ORG/rexrank-job`). The command is
`python -m rexrank.backend infer ...` (`command`). The job gets the maintainers' token and the ledger's signing key
as secrets: it reads the private references and images with the token, writes the aggregates and signs their
ledger entry; the sandboxed model sees neither (every sandbox starts from an emptied environment). Its flavor is
the smallest whose GPUs each hold `gpu_memory_gb` (model.yaml), its timeout sized for the private set's 10,000
studies at `REXRANK_SECONDS_PER_STUDY` (the default allows 8 s). Where a smoke run has measured the model
(rexrank.backend.bill), `plan` sizes the job from that instead: the cheapest flavor that finishes within
MAX_JOB_HOURS, at SAFETY times the estimate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rexrank.errors import InputError
from rexrank.inference.contract import Model

# HF Jobs' GPU flavors (huggingface_hub.JobHardware): (name, GB of memory per GPU, GPUs), cheapest first.
FLAVORS = (("t4-small", 16, 1), ("l4x1", 24, 1), ("a10g-large", 24, 1), ("l40sx1", 48, 1), ("a100-large", 80, 1),
           ("h200", 141, 1), ("l4x4", 24, 4), ("a10g-largex4", 24, 4), ("l40sx4", 48, 4), ("a100x4", 80, 4),
           ("h200x2", 141, 2), ("h200x4", 141, 4), ("l40sx8", 48, 8), ("a100x8", 80, 8), ("h200x8", 141, 8))
PRIVATE_STUDIES = 10_000
SECONDS_PER_STUDY = 8.0
SETUP_SECONDS = 3 * 3600  # the build, the weights, the smoke test and the scoring
SAFETY = 2.0  # a measured estimate's margin: the smoke studies are few and public, the private ones may be longer
MAX_JOB_HOURS = 24


def flavor_for(gpu_memory_gb: float, gpus: int = 1) -> str:
    """The cheapest flavor with `gpus` GPUs of at least `gpu_memory_gb` each."""
    for name, memory, count in FLAVORS:
        if memory >= gpu_memory_gb and count == gpus:
            return name
    raise InputError(f"no HF Jobs flavor has {gpus} GPU(s) of {gpu_memory_gb:g} GB: the largest is 141 GB (H200)")


def timeout_for(gpus: int = 1, seconds_per_study: float | None = None) -> int:
    per_study = seconds_per_study or float(os.environ.get("REXRANK_SECONDS_PER_STUDY", SECONDS_PER_STUDY))
    return int(SETUP_SECONDS + PRIVATE_STUDIES * per_study / max(gpus, 1))


def plan(gpu_memory_gb: float, tasks: float, seconds_per_study: float, fixed_seconds: float = 0.0,
         gpus: int = 1) -> tuple[str, int, int]:
    """(flavor, GPUs, timeout) for a model measured at `seconds_per_study` (and `fixed_seconds` per process: the
    weights' loading): the cheapest flavor, of at least `gpus` GPUs that hold `gpu_memory_gb`, whose run of every
    task, SAFETY times over, ends within MAX_JOB_HOURS; else the one with the most GPUs (rexrank.backend.bill refuses
    what the budget does not cover)."""
    fitting = [(name, count) for name, memory, count in FLAVORS if memory >= gpu_memory_gb and count >= gpus]
    if not fitting:
        raise InputError(f"no HF Jobs flavor has {gpus} or more GPUs of {gpu_memory_gb:g} GB")

    def seconds(count: int) -> int:
        return int(SETUP_SECONDS + tasks * SAFETY * (fixed_seconds + seconds_per_study * -(-PRIVATE_STUDIES // count)))

    most = max(fitting, key=lambda flavor: flavor[1])
    name, count = next((f for f in fitting if seconds(f[1]) <= MAX_JOB_HOURS * 3600), most)
    return name, count, seconds(count)


@dataclass(frozen=True)
class JobSettings:
    """What the inference job is run with, from the maintainers' environment (the webhook Space's variables)."""

    image: str  # REXRANK_JOB_IMAGE
    references: str | None  # REXRANK_PRIVATE_REFERENCES: the private test set (its reports and image paths)
    private_images: str | None  # REXRANK_PRIVATE_IMAGES: a private dataset of its images
    smoke: str | None  # REXRANK_SMOKE: NAME=SPLIT,IMAGES of a public split for the smoke test
    public: tuple[str, ...] = ()  # REXRANK_PUBLIC_RUNS: NAME=SPLIT,IMAGES;... run whole, as generated rows
    gpus: int = 1
    vqa_private: str | None = None  # REXRANK_VQA_PRIVATE: the private ReXVQA questions QUESTIONS[,IMAGES]

    @classmethod
    def from_environment(cls) -> JobSettings | None:
        image = os.environ.get("REXRANK_JOB_IMAGE")
        if not image:
            return None
        public = tuple(s.strip() for s in os.environ.get("REXRANK_PUBLIC_RUNS", "").split(";") if s.strip())
        return cls(image, os.environ.get("REXRANK_PRIVATE_REFERENCES") or None,
                   os.environ.get("REXRANK_PRIVATE_IMAGES") or None, os.environ.get("REXRANK_SMOKE") or None,
                   public, int(os.environ.get("REXRANK_JOB_GPUS", "1")),
                   os.environ.get("REXRANK_VQA_PRIVATE") or None)


def command(repo_id: str, num: int, settings: JobSettings, timeout: int, gpus: int | None = None) -> list[str]:
    """The job's command line (the same on the maintainers' own GPU machine)."""
    args = ["python", "-m", "rexrank.backend", "infer", "--hub", repo_id, "--pr", str(num), "--work",
            "/tmp/rexrank-job", "--gpus", str(gpus or settings.gpus), "--timeout", str(timeout - SETUP_SECONDS)]
    if settings.smoke:
        args += ["--smoke", settings.smoke]
    for spec in settings.public:
        args += ["--public", spec]
    if settings.references:
        args += ["--references", settings.references]
    if settings.private_images:
        args += ["--private-images", settings.private_images]
    if settings.vqa_private:
        args += ["--vqa-private", settings.vqa_private]
    return args


def code_submission(api, repo_id: str, num: int) -> Model | None:
    """The model/ of pull request `num`, checked by every rule (None when it carries none)."""
    import tempfile
    from pathlib import Path

    from rexrank.backend.pull import open_submission

    with tempfile.TemporaryDirectory(prefix="rexrank-code-") as tmp:
        return open_submission(api, repo_id, num, Path(tmp)).checked.model


def _ledger_key() -> dict[str, str]:
    """The ledger's signing key, a secret of the job as of this process (checked first: a job that cannot record
    its results is not started)."""
    from rexrank.rules.signing import KEY_ENV, signing_key

    signing_key()
    return {KEY_ENV: os.environ[KEY_ENV]}


def _ledger_keys() -> dict[str, str]:
    """The public keys the job checks the ledger with (a rotation's older ones), a plain variable."""
    from rexrank.rules.signing import KEYS_ENV

    return {KEYS_ENV: os.environ[KEYS_ENV]} if os.environ.get(KEYS_ENV, "").strip() else {}


def launch(api, repo_id: str, num: int, model: Model, settings: JobSettings, token: str | None = None,
           measured: tuple[float, float] | None = None):
    """Start the inference job for pull request `num` as an HF Job; its JobInfo. `measured`: (seconds per study,
    fixed seconds) from an earlier smoke run of the same model, which then sizes the job (`plan`)."""
    if measured is None:
        gpus, timeout = settings.gpus, timeout_for(settings.gpus)
        flavor = flavor_for(model.gpu_memory_gb, gpus)
    else:
        flavor, gpus, timeout = plan(model.gpu_memory_gb, model.private_load, *measured, gpus=settings.gpus)
    return api.run_job(image=settings.image, command=command(repo_id, num, settings, timeout, gpus),
                       secrets={"HF_TOKEN": token or api.token, **_ledger_key()}, env=_ledger_keys(), flavor=flavor,
                       timeout=timeout, name=f"rexrank-infer-{repo_id.split('/')[-1]}-pr{num}",
                       labels={"rexrank-pr": str(num)})
