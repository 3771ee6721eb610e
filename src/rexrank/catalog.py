"""The test sets, RadRBench-CXR and the board's metrics, each defined once: the names results and files use,
how the board shows them, which split ReXrank scores and its size, which text is credentialed, which set only the
maintainers score, what each dataset card says, and how ReXrank's own tables name each (docs/metrics.md §10).
Everything else reads these.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DatasetInfo:
    """What a dataset card says about a source, whatever the build."""

    name: str  # "mimic-cxr"
    title: str
    description: str
    licence: str  # the Hub's `license:` value ("other" when it is a data use agreement)
    access: str  # who may use it and how (the terms a user must accept)
    citation: str
    homepage: str
    credentialed: bool = True  # report text may not leave the user's hands (nor go to public LLM APIs)



@dataclass(frozen=True)
class TestSet:
    name: str  # in results, file names and the board: "mimic-cxr"
    title: str  # as the board shows it
    split: str  # the split ReXrank scores
    studies: int  # its size in ReXrank's split file
    credentialed: bool  # under a data use agreement: never sent to a public LLM API
    private: bool  # scored only by the maintainers' gated job; a submission carries predictions only
    official_key: str = ""  # ReXrank's table files, findings_result_<key>.csv, result_<key>.csv ("": it has none)
    card: dict = field(default_factory=dict)  # the dataset card's texts (DatasetInfo's; {studies} is filled in)
    rexrank_file: str = ""  # ReXrank's split JSON for `split`, where the ReXrank authors publish one
    other_splits: dict[str, int] = field(default_factory=dict)  # other official splits rexrank knows, and sizes

    @property
    def info(self) -> DatasetInfo:
        """What the built dataset's card says (`rexrank.data.build`)."""
        texts = {k: v.format(studies=self.studies) if k == "description" else v for k, v in self.card.items()}
        return DatasetInfo(self.name, credentialed=self.credentialed, **texts)


REXRANK_CITATION = """\
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N and
          Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
"""


_MIMIC_CXR_CARD = dict(
    title="MIMIC-CXR (ReXrank)",
    description=(
        "The official MIMIC-CXR 2.0.0 test split, studies whose report has a findings section ({studies:,}; 723 "
        "of them have no impression), as ReXrank scores it."),
    licence="other",
    access=(
        "MIMIC-CXR is credentialed data: use requires PhysioNet credentialing, the CITI training and signing the "
        "PhysioNet Credentialed Health Data Use Agreement 1.5.0 (https://physionet.org/content/mimic-cxr/2.0.0/). "
        "Keep this dataset private or gated to credentialed users, and never send its text to public LLM APIs."),
    citation="""@article{johnson2019mimic,
  title={MIMIC-CXR, a de-identified publicly available database of chest radiographs with free-text reports},
  author={Johnson, Alistair EW and Pollard, Tom J and Berkowitz, Seth J and Greenbaum, Nathaniel R and
          Lungren, Matthew P and Deng, Chih-ying and Mark, Roger G and Horng, Steven},
  journal={Scientific Data}, volume={6}, number={1}, pages={317}, year={2019}
}
""" + REXRANK_CITATION,
    homepage="https://physionet.org/content/mimic-cxr/2.0.0/")

_IU_XRAY_CARD = dict(
    title="IU-Xray (Open-i, ReXrank)",
    description=(
        "The Indiana University chest X-ray collection (Open-i) in R2Gen's split: test {studies:,} studies, valid "
        "296, as ReXrank scores it."),
    licence="cc-by-nc-nd-4.0",
    access=(
        "Open-i's Indiana University chest X-ray collection is distributed under CC BY-NC-ND 4.0 "
        "(https://openi.nlm.nih.gov/faq): non-commercial use, attribution, no derivatives."),
    citation="""@article{demner2016preparing,
  title={Preparing a collection of radiology examinations for distribution and retrieval},
  author={Demner-Fushman, Dina and Kohli, Marc D and Rosenman, Marc B and Shooshan, Sonya E and Rodriguez, Laritza
          and Antani, Sameer and Thoma, George R and McDonald, Clement J},
  journal={Journal of the American Medical Informatics Association}, volume={23}, number={2}, pages={304--310},
  year={2016}
}
""" + REXRANK_CITATION,
    homepage="https://openi.nlm.nih.gov/")

_CHEXPERT_PLUS_CARD = dict(
    title="CheXpert Plus (ReXrank)",
    description=(
        "The CheXpert Plus validation split ({studies:,} studies; 62 have a findings section), as ReXrank scores it."),
    licence="other",
    access=(
        "CheXpert Plus is released under the Stanford University School of Medicine CheXpert Plus Dataset Research "
        "Use Agreement (https://aimi.stanford.edu/datasets/chexpert-plus): research use only, no redistribution. Keep "
        "this dataset private or gated to users who accepted the agreement."),
    citation="""@article{chambon2024chexpert,
  title={CheXpert Plus: Augmenting a Large Chest X-ray Dataset with Text Radiology Reports, Patient Demographics
         and Additional Image Formats},
  author={Chambon, Pierre and Delbrouck, Jean-Benoit and Sounack, Thomas and others},
  journal={arXiv preprint arXiv:2405.19538}, year={2024}
}
""" + REXRANK_CITATION,
    homepage="https://aimi.stanford.edu/datasets/chexpert-plus")

_REXGRADIENT_CARD = dict(
    title="ReXGradient (ReXrank)",
    description=(
        "ReXGradient chest X-ray studies from 67 US sites (Gradient Health). ReXrank's private test set ({studies:,} "
        "studies) never leaves the maintainers' gated backend; the public ReXGradient-160K splits build the same way."),
    licence="other",
    access=(
        "ReXGradient-160K is gated on the Hugging Face Hub (rajpurkarlab/ReXGradient-160K) under its research-use "
        "terms; the private test set is held by the ReXrank maintainers. Always private."),
    citation="""@article{zhang2025rexgradient,
  title={ReXGradient-160K: A Large-Scale Publicly Available Dataset of Chest Radiographs with Free-text Reports},
  author={Zhang, Xiaoman and Acosta, Juli{\\'a}n N and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2505.00228}, year={2025}
}
""" + REXRANK_CITATION,
    homepage="https://huggingface.co/datasets/rajpurkarlab/ReXGradient-160K")

TEST_SETS: dict[str, TestSet] = {t.name: t for t in (
    TestSet("rexgradient", "ReXGradient", "test", 10_000, credentialed=True, private=True,
            official_key="gradienthealth", card=_REXGRADIENT_CARD),
    TestSet("mimic-cxr", "MIMIC-CXR", "test", 2_347, credentialed=True, private=False, official_key="mimiccxr",
            card=_MIMIC_CXR_CARD, rexrank_file="ReXRank_MIMICCXR_test.json"),
    TestSet("iu-xray", "IU-Xray", "test", 590, credentialed=False, private=False, official_key="iu_xray",
            card=_IU_XRAY_CARD, rexrank_file="ReXRank_IUXray_test.json", other_splits={"valid": 296}),
    TestSet("chexpert-plus", "CheXpert Plus", "valid", 200, credentialed=True, private=False,
            official_key="chexpertplus", card=_CHEXPERT_PLUS_CARD, rexrank_file="ReXRank_CheXpertPlus.json"),
)}
PUBLIC_DATASETS = tuple(name for name, t in TEST_SETS.items() if not t.private)
PRIVATE_DATASETS = tuple(name for name, t in TEST_SETS.items() if t.private)
DATASETS = PUBLIC_DATASETS + PRIVATE_DATASETS

RADRBENCH_CITATION = """\
@article{fan2025chestx,
  title={ChestX-Reasoner: Advancing Radiology Foundation Models with Reasoning through Step-by-Step Verification},
  author={Fan, Ziqing and Liang, Cheng and Wu, Chaoyi and Zhang, Ya and Wang, Yanfeng and Xie, Weidi},
  journal={arXiv preprint arXiv:2504.20930},
  year={2025}
}
"""
# RadRBench-CXR (ChestX-Reasoner's reasoning benchmark): items, not studies; built by rexrank.radrbench.dataset.
RADRBENCH_CXR = DatasetInfo(
    "radrbench-cxr", "RadRBench-CXR test (rexrank)",
    "RadRBench-CXR, the chest X-ray reasoning benchmark of ChestX-Reasoner: visual questions (binary, single "
    "choice, multiple choice, multiple findings without options, temporal change) on MIMIC-CXR, CheXpert, RSNA, "
    "SIIM and MS-CXR-T images, with, for the reasoning subset, the source report and the reference reasoning steps "
    "that RadRScore compares a model's reasoning with.",
    "other",
    "RadRBench-CXR items derive from MIMIC-CXR, MS-CXR-T and CheXpert (credentialed: PhysioNet credentialing and "
    "its data use agreement, the Stanford AIMI research use agreement) and from the RSNA and SIIM challenge images. "
    "Keep this dataset private or gated to users who accepted every source's terms, and never send its text to "
    "public LLM APIs.",
    RADRBENCH_CITATION, "https://huggingface.co/datasets/byrLLCC/RadRBench-CXR")

# RadRBench-CXR's sources: each one's terms for images and text, for its card (MIMIC-CXR, MS-CXR-T, CheXpert:
# credentialed).
RADRBENCH_TERMS = {
    "mimic-cxr": "MIMIC-CXR / MIMIC-CXR-JPG (https://physionet.org/content/mimic-cxr-jpg/2.0.0/): PhysioNet "
                 "credentialed access, CITI training, PhysioNet Credentialed Health Data Use Agreement 1.5.0. The "
                 "questions, reports and reasoning steps derive from MIMIC-CXR reports: never send them to public "
                 "LLM APIs.",
    "ms-cxr-t": "MS-CXR-T (https://physionet.org/content/ms-cxr-t/), built on MIMIC-CXR: PhysioNet credentialed "
                "access under the same data use agreement; never send its text to public LLM APIs.",
    "chexpert": "CheXpert and CheXpert Plus (https://aimi.stanford.edu/datasets/chexpert-plus): Stanford AIMI "
                "research use agreement; research use only, no redistribution.",
    "rsna": "RSNA Pneumonia Detection Challenge (https://www.kaggle.com/c/rsna-pneumonia-detection-challenge): the "
            "competition's data terms (images from the NIH ChestX-ray14 set).",
    "siim": "SIIM-ACR Pneumothorax Segmentation (https://www.kaggle.com/c/siim-acr-pneumothorax-segmentation): the "
            "competition's data terms.",
    "iu-xray": "Open-i Indiana University chest X-ray collection (https://openi.nlm.nih.gov/): CC BY-NC-ND 4.0.",
}

# Credentialed text that is not a report test set: RadRBench-CXR's items quote MIMIC-CXR and CheXpert reports.
OTHER_CREDENTIALED = {RADRBENCH_CXR.name: "RadRBench-CXR"}

REXVQA_CITATION = """\
@article{pal2025rexvqa,
  title={ReXVQA: A Large-scale Visual Question Answering Benchmark for Generalist Chest X-ray Understanding},
  author={Pal, Ankit and Lee, Jung-Oh and Zhang, Xiaoman and Sankarasubbu, Malaikannan and Roh, Seunghyeon and
          Kim, Won Jung and Lee, Meesun and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2506.04353},
  year={2025}
}
"""
# ReXVQA (ReXrank Challenge V2.0's VQA track): multiple-choice questions, known by question id, on ReXGradient-160K's
# studies; built by rexrank.vqa.dataset from the Hub's own files (`metadata/<split>_vqa_data.json`).
REXVQA = DatasetInfo(
    "rexvqa", "ReXVQA (rexrank)",
    "ReXVQA, multiple-choice visual question answering on chest X-rays: each question has four options written "
    "`A. ...` to `D. ...`, one correct letter and one of five reasoning categories (presence assessment, location and "
    "distribution assessment, negation assessment, differential diagnosis, geometric information assessment); its "
    "images are ReXGradient-160K's. ReXrank Challenge V2.0 ranks models by accuracy over the categories.",
    "other",
    "ReXVQA and ReXGradient-160K are released on the Hugging Face Hub under their own terms, which a user accepts on "
    "the Hub before downloading; the questions quote report findings. Keep the built dataset private or gated to "
    "users who accepted them.",
    REXVQA_CITATION, "https://huggingface.co/datasets/rajpurkarlab/ReXVQA")
# The five categories ReXrank scores (`task_name` in ReXVQA's metadata), in the order of its VQA table's columns.
VQA_CATEGORIES: tuple[str, ...] = ("Differential Diagnosis", "Geometric Information Assessment",
                                   "Location and Distribution Assessment", "Negation Assessment",
                                   "Presence Assessment")
VQA_TOTAL_QUESTIONS = 653_834  # ReXVQA on 160,000 studies, as ReXrank's site states it
VQA_TASK = "vqa"  # the task a VQA result names, beside the report tasks (findings, findings_impression)
VQA_PRIVATE = {"split": "private", "questions": 41_007, "studies": 10_000}  # the challenge's set: ids and counts only

TASK_TITLES = {"findings": "Findings", "findings_impression": "Findings + Impression"}
# How a model can be had, as a submission's card says (`access`; blank: not said): the board filters on it.
ACCESS = {"open-weights": "open weights", "api": "API"}



def built_dataset(name: str) -> tuple[DatasetInfo, bool] | None:
    """What `rexrank build-dataset NAME` builds: its facts and whether it is always kept private (None: unknown)."""
    if name in TEST_SETS:
        return TEST_SETS[name].info, TEST_SETS[name].private
    return {RADRBENCH_CXR.name: (RADRBENCH_CXR, True), REXVQA.name: (REXVQA, True)}.get(name)
