"""RadRBench-CXR (MAGIC-AI4Med/ChestX-Reasoner, data `byrLLCC/RadRBench-CXR`): answer accuracy with one parser for
every model (`answers`) and the judged reasoning score RadRScore (`radrscore`). Not a report metric: these score a
model's `<think>...</think><answer>...</answer>` outputs on the benchmark's questions."""
