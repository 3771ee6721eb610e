#!/usr/bin/env bash
# The reference packages in their own venv (transformers 4, slow tokenizers), as the official numbers were made:
# radgraph 0.1.18, f1chexbert 0.0.2, and bert-score 0.3.13 rather than 0.3.11. CXR-Report-Metric pinned bert-score 0.3.11 with
# transformers 3.0.1, where RobertaTokenizer subclasses GPT2Tokenizer and so gets the leading space; on
# transformers 4, 0.3.11's `isinstance(tokenizer, GPT2Tokenizer)` is false and the space is lost. 0.3.13 checks
# RobertaTokenizer too, which restores the pinned behaviour. ratescore 0.6.0 with medspacy 1.3.1 (PyRuSH
# 1.0.13, spaCy 3.7) is what `pip install ratescore medspacy` gives today; medspacy pins numpy < 2, another
# reason this stack lives apart. Tests talk to this venv through files only.
# Usage: tests/parity/make_venv.sh [DIR]   (default .venv-reference; about 2 minutes)
set -euo pipefail
dir=${1:-.venv-reference}
python3 -m venv "$dir"
"$dir/bin/pip" install -q --disable-pip-version-check torch==2.13.0
"$dir/bin/pip" install -q --disable-pip-version-check transformers==4.44.2 tokenizers==0.19.1 \
  huggingface_hub==0.36.2 radgraph==0.1.18 f1chexbert==0.0.2 bert-score==0.3.13 \
  ratescore==0.6.0 medspacy==1.3.1 PyRuSH==1.0.13 spacy==3.7.5 pandas "numpy<2" dotmap appdirs
echo "$dir/bin/python"
