"""Every model the metrics need: its Hub repository, the commit it is pinned to, the files rexrank fetches from it,
and every file the repository carries at that commit (its manifest), with where each fact was verified.

Pins were read from public pages and records of the Hub (its commit and tree pages, and third-party manifests that
recorded each file's size and sha256 at the commit), not from the live Hub: where a fact could only be inferred,
the entry says so. The tests serve these manifests from the fake Hub under their real names and pinned commits,
with stand-in contents (tests/fixtures/hub_models.py), so a resolution test sees the files a real repository has,
and does not see the ones it lacks.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    key: str  # BERTSCORE -> REXRANK_MODEL_BERTSCORE
    repo_id: str
    revision: str  # the pinned commit
    files: tuple[str, ...]  # what rexrank fetches: each must arrive, or the download fails naming it
    what: str
    manifest: tuple[str, ...] = ()  # every file of the repository at `revision`, as far as verified
    verified: str = ""  # where the pin and the manifest were read
    names: tuple[str, ...] = ()  # other repo ids that name this model (a renamed repository's old id)

    @property
    def env(self) -> str:
        return f"REXRANK_MODEL_{self.key}"

    @property
    def pinned(self) -> str:
        """repo@commit (12 digits) of the pinned revision, as a signature names the Hub's weights."""
        return f"{self.repo_id}@{self.revision[:12]}"


RRG_SCORERS = ("StanfordAIMI/RRG_scorers", "3ef1a0c82b418549078cd93b24b12c6e67bf9862",
               (".gitattributes", "README.md", "chexbert.pth", "model_medrad_19k.gz", "radgraph.tar.gz",
                "radgraph-xl.tar.gz", "echograph.tar.gz"),
               "huggingface.co/StanfordAIMI/RRG_scorers/commit/3ef1a0c8 (\"Upload echograph.tar.gz\", the head of "
               "15 commits, late 2024) and its tree; radgraph.tar.gz at this commit is the re-upload of "
               "2024-03-27 (commit d0c5c616, 432,402,434 bytes, sha256 7808499d...), not the 2022 original "
               "(commit d97745aa, 432,736,452 bytes, sha256 f7310cc5...), which commit c4d6dec5 deleted")

MODELS: dict[str, ModelSpec] = {spec.key: spec for spec in (
    ModelSpec(
        "BERTSCORE", "distilbert/distilroberta-base", "fb53ab8802853c8e4fbdbcd0529f21fc6f459b2b",
        ("config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"),
        "BERTScore encoder (distilroberta-base)",
        ("README.md", "config.json", "merges.txt", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
         "vocab.json"),
        "each file's size and sha256 at fb53ab88 recorded by a public download manifest (github.com/shubsharan/"
        "palimpsest, artifacts/gate-b/inputs/input-manifest.json: model.safetensors 331,055,963 bytes, "
        "tokenizer_config.json {\"model_max_length\": 512}); README.md at huggingface.co/distilbert/"
        "distilroberta-base/blob/fb53ab88/README.md. dict.txt, pytorch_model.bin, tf_model.h5 and rust_model.ot "
        "were in the repository in 2020 and are probably still there: not verified. Whether fb53ab88 is main's "
        "head: not verified"),
    ModelSpec(
        "CHEXBERT", RRG_SCORERS[0], RRG_SCORERS[1], ("chexbert.pth",), "CheXbert checkpoint (chexbert.pth)",
        RRG_SCORERS[2], RRG_SCORERS[3] + "; chexbert.pth 1.31 GB, sha256 6550703c..."),
    ModelSpec(
        "RADGRAPH", RRG_SCORERS[0], RRG_SCORERS[1], ("radgraph.tar.gz",),
        "RadGraph v1 model (radgraph.tar.gz: config.json, vocabulary/, weights.th)", RRG_SCORERS[2], RRG_SCORERS[3]),
    ModelSpec(
        "RADGRAPH_ENCODER", "microsoft/BiomedNLP-BiomedBERT-base-uncased-abstract-fulltext",
        "9f030fc50b237b82db5a6959777d778d601f6308", ("config.json", "vocab.txt", "tokenizer_config.json"),
        "RadGraph's encoder configuration and vocabulary (PubMedBERT abstract+fulltext; its weights come from "
        "radgraph.tar.gz)",
        (".gitattributes", "LICENSE.md", "README.md", "config.json", "flax_model.msgpack", "pytorch_model.bin",
         "tokenizer_config.json", "vocab.txt"),
        "9f030fc5 is the commit that renamed the repository from BiomedNLP-PubMedBERT-... (2023-11-03); its files "
        "rebuilt from the tree at 9df7bc8b and the later history, every later commit README-only (main's head "
        "e1354b7a); tokenizer_config.json is {\"do_lower_case\": true}; no tokenizer.json. The tree page of "
        "9f030fc5 itself was not seen. radgraph.tar.gz's config names the encoder by its old id "
        "(reported by users of the archive, not read from it here)",
        names=("microsoft/BiomedNLP-PubMedBERT-base-uncased-abstract-fulltext",)),
    ModelSpec(
        "BERT_BASE_UNCASED", "google-bert/bert-base-uncased", "86b5e0934494bd15c9632b12f734a8a67f723594",
        ("config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"),
        "bert-base-uncased configuration and WordPiece vocabulary (CheXbert's tokenizer)",
        (".gitattributes", "LICENSE", "README.md", "config.json", "coreml/fill-mask/float32_model.mlpackage/"
         "Data/com.apple.CoreML/model.mlmodel", "coreml/fill-mask/float32_model.mlpackage/Data/com.apple.CoreML/"
         "weights/weight.bin", "coreml/fill-mask/float32_model.mlpackage/Manifest.json", "flax_model.msgpack",
         "model.onnx", "model.safetensors", "pytorch_model.bin", "rust_model.ot", "tf_model.h5", "tokenizer.json",
         "tokenizer_config.json", "vocab.txt"),
        "main's head since 2024-02-19 by recorded /api/models responses (sha 86b5e093, 16 files); sizes and "
        "sha256 per file from a public script pinned to it (vocab.txt 231,508 bytes, tokenizer_config.json "
        "{\"do_lower_case\": true, \"model_max_length\": 512}); no special_tokens_map.json"),
    ModelSpec(
        "RATE_NER", "Angelakeke/RaTE-NER-Deberta", "66d4b8189374f9b137e1b8633951ca4b4d758673",
        ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
         "added_tokens.json"),
        "RaTEScore entity tagger (RaTE-NER-Deberta)",
        (".gitattributes", "README.md", "added_tokens.json", "config.json", "model.safetensors",
         "special_tokens_map.json", "spm.model", "tokenizer.json", "tokenizer_config.json"),
        "main's head, \"Update README.md\", 24 commits (huggingface.co/Angelakeke/RaTE-NER-Deberta/tree/66d4b818); "
        "sizes and sha256 per file at it from a public asset list (config.json 1,439 bytes, model.safetensors "
        "735,384,420 bytes). Commit 41458cde (2024-06-20, also seen in public material) has an 850-byte "
        "config.json that, by its size, holds no label names, and ratescore reads the 11 IOB labels (O = 10) "
        "from config.id2label: so the pin is main's head, whose config has them (inferred from its size; "
        "rexrank refuses a config without them)"),
    ModelSpec(
        "BIOLORD", "FremyCompany/BioLORD-2023-C", "4bb5abd13930002136e3a5750b84474763c775c5",
        ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"),
        "RaTEScore entity encoder (BioLORD-2023-C)",
        (".gitattributes", "README.md", "config.json", "model.safetensors", "pytorch_model.bin",
         "sentence_bert_config.json", "special_tokens_map.json", "tokenizer_config.json", "vocab.txt"),
        "main's head \"Update README.md\" on huggingface.co/FremyCompany/BioLORD-2023-C/commits/main; its config.json "
        "read at blob/4bb5abd1 (MPNet, hidden 768); sizes and sha256 at it from a public asset list "
        "(model.safetensors 437,971,872 bytes, vocab.txt 231,536). No tokenizer.json at any commit: the tokenizer "
        "is built from vocab.txt as transformers builds it. Whether model.safetensors is at 4bb5abd1 rests on that "
        "list (a tree page showed it at main under another head, 3924e73): if it is not, the download fails "
        "naming it"),
    ModelSpec(
        "GREEN", "StanfordAIMI/GREEN-RadLlama2-7b", "832389d56bbd45a36bbd61dfa4f0be76e99f1dad",
        ("config.json", "generation_config.json", "model-00001-of-00003.safetensors",
         "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors", "model.safetensors.index.json",
         "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
         "tokenization_chexagent.py"),  # its tokenizer's code: fetched, run only with --green-trust-remote-code
        "GREEN judge model (GREEN-RadLlama2-7b, Llama-2 7B, about 13.5 GB)",
        (".gitattributes", "README.md", "added_tokens.json", "config.json", "generation_config.json",
         "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors",
         "model.safetensors.index.json", "special_tokens_map.json", "tokenization_chexagent.py", "tokenizer.model",
         "tokenizer_config.json", "trainer_state.json", "training_args.bin"),
        "huggingface.co/StanfordAIMI/GREEN-RadLlama2-7b/commit/832389d5 (\"Upload tokenization_chexagent.py\", "
        "2024-05-16, the newest of 8 commits) and its tree; the tokenizer is custom code (auto_map to "
        "tokenization_chexagent.CheXagentTokenizer, a slow sentencepiece tokenizer over tokenizer.model, sha256 "
        "9e556afd...); no tokenizer.json. GREEN's own code spells the repo GREEN-radllama2-7b",
        names=("StanfordAIMI/GREEN-radllama2-7b",)),
)}
