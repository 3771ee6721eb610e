"""The test sets rexrank builds, what their cards say, and which reader turns each source format into a `Build`.

Each dataset can be built from ReXrank's split JSON (what the ReXrank authors distribute) or from the original
release in its own layout (read by a module of its own in `rexrank.data`). Sources are the user's downloads;
nothing here ships report text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rexrank.catalog import TEST_SETS
from rexrank.data import chexpert_plus, iu_xray, mimic, radrbench, rexgradient
from rexrank.data.build import Build, DatasetInfo, read_rexrank_json, write_dataset
from rexrank.errors import InputError

REXRANK_CITATION = """\
@article{zhang2024rexrank,
  title={ReXrank: A Public Leaderboard for AI-Powered Radiology Report Generation},
  author={Zhang, Xiaoman and Zhou, Hong-Yu and Yang, Xiaoli and Banerjee, Oishi and Acosta, Juli{\\'a}n N and
          Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2411.15122},
  year={2024}
}
"""

MIMIC_CXR = DatasetInfo(
    "mimic-cxr", "MIMIC-CXR (ReXrank)",
    "The official MIMIC-CXR 2.0.0 test split, studies whose report has a findings section (2,347; 723 of them "
    "have no impression), as ReXrank scores it.",
    "other",
    "MIMIC-CXR is credentialed data: use requires PhysioNet credentialing, the CITI training and signing the "
    "PhysioNet Credentialed Health Data Use Agreement 1.5.0 (https://physionet.org/content/mimic-cxr/2.0.0/). "
    "Keep this dataset private or gated to credentialed users, and never send its text to public LLM APIs.",
    """@article{johnson2019mimic,
  title={MIMIC-CXR, a de-identified publicly available database of chest radiographs with free-text reports},
  author={Johnson, Alistair EW and Pollard, Tom J and Berkowitz, Seth J and Greenbaum, Nathaniel R and
          Lungren, Matthew P and Deng, Chih-ying and Mark, Roger G and Horng, Steven},
  journal={Scientific Data}, volume={6}, number={1}, pages={317}, year={2019}
}
""" + REXRANK_CITATION,
    "https://physionet.org/content/mimic-cxr/2.0.0/")

IU_XRAY = DatasetInfo(
    "iu-xray", "IU-Xray (Open-i, ReXrank)",
    "The Indiana University chest X-ray collection (Open-i) in R2Gen's split: test 590 studies, valid 296, as "
    "ReXrank scores it.",
    "cc-by-nc-nd-4.0",
    "Open-i's Indiana University chest X-ray collection is distributed under CC BY-NC-ND 4.0 "
    "(https://openi.nlm.nih.gov/faq): non-commercial use, attribution, no derivatives.",
    """@article{demner2016preparing,
  title={Preparing a collection of radiology examinations for distribution and retrieval},
  author={Demner-Fushman, Dina and Kohli, Marc D and Rosenman, Marc B and Shooshan, Sonya E and Rodriguez, Laritza
          and Antani, Sameer and Thoma, George R and McDonald, Clement J},
  journal={Journal of the American Medical Informatics Association}, volume={23}, number={2}, pages={304--310},
  year={2016}
}
""" + REXRANK_CITATION,
    "https://openi.nlm.nih.gov/", credentialed=TEST_SETS["iu-xray"].credentialed)

CHEXPERT_PLUS = DatasetInfo(
    "chexpert-plus", "CheXpert Plus (ReXrank)",
    "The CheXpert Plus validation split (200 studies; 62 have a findings section), as ReXrank scores it.",
    "other",
    "CheXpert Plus is released under the Stanford University School of Medicine CheXpert Plus Dataset Research "
    "Use Agreement (https://aimi.stanford.edu/datasets/chexpert-plus): research use only, no redistribution. Keep "
    "this dataset private or gated to users who accepted the agreement.",
    """@article{chambon2024chexpert,
  title={CheXpert Plus: Augmenting a Large Chest X-ray Dataset with Text Radiology Reports, Patient Demographics
         and Additional Image Formats},
  author={Chambon, Pierre and Delbrouck, Jean-Benoit and Sounack, Thomas and others},
  journal={arXiv preprint arXiv:2405.19538}, year={2024}
}
""" + REXRANK_CITATION,
    "https://aimi.stanford.edu/datasets/chexpert-plus")

REXGRADIENT = DatasetInfo(
    "rexgradient", "ReXGradient (ReXrank)",
    "ReXGradient chest X-ray studies from 67 US sites (Gradient Health). ReXrank's private test set (10,000 "
    "studies) never leaves the maintainers' gated backend; the public ReXGradient-160K splits build the same way.",
    "other",
    "ReXGradient-160K is gated on the Hugging Face Hub (rajpurkarlab/ReXGradient-160K) under its research-use "
    "terms; the private test set is held by the ReXrank maintainers. Always private.",
    """@article{zhang2025rexgradient,
  title={ReXGradient-160K: A Large-Scale Publicly Available Dataset of Chest Radiographs with Free-text Reports},
  author={Zhang, Xiaoman and Acosta, Juli{\\'a}n N and Miller, Josh and Huang, Ouwen and Rajpurkar, Pranav},
  journal={arXiv preprint arXiv:2505.00228}, year={2025}
}
""" + REXRANK_CITATION,
    "https://huggingface.co/datasets/rajpurkarlab/ReXGradient-160K")

Reader = Callable[[Sequence[Path], str, "Path | None"], Build]  # (sources, split, image root) -> Build


@dataclass(frozen=True)
class Builder:
    info: DatasetInfo
    default_split: str
    originals: Reader | None = None  # the original release's layout; None until a reader exists
    originals_help: str = ""  # which files the original layout needs, for the CLI's help and errors
    always_private: bool = False
    rexrank_file: str = ""  # ReXrank's split JSON for the default split, where the ReXrank authors publish one

    def read(self, sources: Sequence[Path], split: str | None = None, image_root: Path | None = None) -> Build:
        split = split or self.default_split
        missing = [str(p) for p in sources if not p.exists()]
        if missing:
            raise InputError(f"{self.info.name}: no such source: {', '.join(missing)}")
        if len(sources) == 1 and sources[0].suffix == ".json" and _is_rexrank_split(sources[0]):
            return read_rexrank_json(self.info, sources[0], split)
        if self.originals is None:
            raise InputError(f"{self.info.name}: give ReXrank's split JSON as --source (building from the original "
                             "release is not supported yet)")
        return self.originals(sources, split, image_root)

    def write(self, build: Build, out: str | Path) -> Path:
        return write_dataset(build, out)

    def summary(self, info: dict, folder: Path) -> str:
        """One line on what was built (the CLI prints it)."""
        counts = info["counts"]
        return (f"{self.info.name} {info['split']}: {counts['studies']:,} studies ({counts['findings']:,} with "
                f"findings, {counts['findings_impression']:,} in findings_impression) -> {folder}")


def _is_rexrank_split(path: Path) -> bool:
    """A ReXrank split file starts `{"<study id>": {` ... with section_findings in its first record."""
    with path.open(encoding="utf-8", errors="replace") as f:
        head = f.read(1 << 16)
    return head.lstrip().startswith("{") and "section_findings" in head


BUILDERS: dict[str, Builder] = {
    "mimic-cxr": Builder(MIMIC_CXR, "test", originals=mimic.read_mimic, originals_help=mimic.HELP,
                         rexrank_file="ReXRank_MIMICCXR_test.json"),
    "iu-xray": Builder(IU_XRAY, "test", originals=iu_xray.read_iu_xray, originals_help=iu_xray.HELP,
                       rexrank_file="ReXRank_IUXray_test.json"),
    "chexpert-plus": Builder(CHEXPERT_PLUS, "valid", originals=chexpert_plus.read_chexpert_plus,
                             originals_help=chexpert_plus.HELP, rexrank_file="ReXRank_CheXpertPlus.json"),
    "rexgradient": Builder(REXGRADIENT, "test", originals=rexgradient.read_rexgradient,
                           originals_help=rexgradient.HELP, always_private=True),
}

BUILDERS[radrbench.NAME] = radrbench.BUILDER  # items, not studies: its own reader, writer and card


def builder(name: str) -> Builder:
    if name not in BUILDERS:
        raise InputError(f"unknown dataset {name!r}: rexrank builds {', '.join(BUILDERS)}")
    return BUILDERS[name]
