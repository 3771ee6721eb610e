#!/usr/bin/env bash
# The wheels benchmarks/gpu.sh installs on the GPU machine, which reaches no package registry. Run here, in the
# repository's root; it writes two git-ignored folders for that machine's Python 3.12 on x86-64:
#   .whl        what rexrank needs beyond the machine's image (spaCy 3.8 for RaTEScore's sentences, bert-score)
#   .whl-peers  the transformers-4 stack of tests/parity/make_venv.sh (its resolved versions), without torch and
#               without what the image already holds in a version the stack accepts
# The image's packages are listed in the device library's KINDS.md; the two folders travel in one call (64 MiB).
set -euo pipefail
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
grep -qx '/.whl-peers/' .git/info/exclude || echo '/.whl-peers/' >> .git/info/exclude
get() {
  dir=$1; shift
  python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
    --platform manylinux_2_5_x86_64 -d "$dir" "$@"
}
pure() {  # sdist-only packages of pure Python, built into wheels here
  dir=$1; shift
  python3 -m pip wheel -q --disable-pip-version-check --no-deps --no-binary=:all: -w "$dir" "$@"
}
get .whl spacy==3.8.18 thinc==8.3.14 blis==1.3.4 cymem==2.0.16 preshed==3.0.15 murmurhash==1.0.16 srsly==2.5.6 \
  wasabi==1.1.3 catalogue==2.0.10 confection==1.3.4 weasel==1.0.1 spacy-legacy==3.0.12 spacy-loggers==1.0.5 \
  cloudpathlib==0.26.0 smart_open==9.0.2 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 \
  typing-inspection==0.4.5 bert-score==0.3.13
get .whl-peers numpy==1.26.4 transformers==4.44.2 tokenizers==0.19.1 huggingface_hub==0.36.2 RaTEScore==0.6.0 \
  PyRuSH==1.0.13 PyFastNER==1.0.10 pysimstring==1.3.0 quicksectx==0.4.1 medspacy_unqlite==0.9.8 spacy==3.7.5 \
  thinc==8.2.5 blis==0.7.11 cymem==2.0.16 preshed==3.0.15 murmurhash==1.0.16 srsly==2.5.6 wasabi==1.1.3 \
  catalogue==2.0.10 confection==0.1.5 weasel==0.4.3 spacy-legacy==3.0.12 spacy-loggers==1.0.5 langcodes==3.5.1 \
  cloudpathlib==0.26.0 smart_open==7.7.1 pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 \
  typing-inspection==0.4.5 jsonpickle==4.1.4 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
  referencing==0.37.0 rpds-py==2026.9.1 loguru==0.7.3 nltk==3.10.4 pysbd==0.3.4 Unidecode==1.4.0 \
  defusedxml==0.7.1 tzdata==2026.6 appdirs==1.4.4 dotmap==1.3.30
pure .whl-peers f1chexbert==0.0.2 radgraph==0.1.18 medspacy==1.3.1 medspacy_quickumls==3.2
du -sh .whl .whl-peers
