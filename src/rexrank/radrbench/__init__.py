"""RadRBench-CXR (MAGIC-AI4Med/ChestX-Reasoner, data `byrLLCC/RadRBench-CXR`): answer accuracy with one parser for
every model (`answers`), the benchmark's tables (`score`); its judged reasoning score RadRScore is a metric like the
others (`rexrank.scorers.radrscore`). Not a report benchmark: these score a model's
`<think>...</think><answer>...</answer>` outputs on the benchmark's questions."""

# RadRScore and its components, as a RadRBench-CXR result's `radrscore.rows` name them (`score.reasoning_rows`).
RADRSCORE_PARTS = ("radrscore", "completeness", "factuality", "effectiveness")
