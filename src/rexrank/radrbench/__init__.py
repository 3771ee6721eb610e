"""RadRBench-CXR (MAGIC-AI4Med/ChestX-Reasoner, data `byrLLCC/RadRBench-CXR`): answer accuracy with one parser for
every model (`answers`), the benchmark's tables (`score`); its judged reasoning score RadRScore is a metric like the
others (`rexrank.scorers.radrscore`). Not a report benchmark: these score a model's
`<think>...</think><answer>...</answer>` outputs on the benchmark's questions."""

# RadRScore and its components, as a RadRBench-CXR result's `radrscore.rows` name them (`score.reasoning_rows`).
RADRSCORE_PARTS = ("radrscore", "completeness", "factuality", "effectiveness")
CITATION = """\
@article{fan2025chestx,
  title={ChestX-Reasoner: Advancing Radiology Foundation Models with Reasoning through Step-by-Step Verification},
  author={Fan, Ziqing and Liang, Cheng and Wu, Chaoyi and Zhang, Ya and Wang, Yanfeng and Xie, Weidi},
  journal={arXiv preprint arXiv:2504.20930},
  year={2025}
}
"""
