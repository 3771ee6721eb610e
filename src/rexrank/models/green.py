"""GREEN's judge run on this machine with `transformers` (`rexrank.scorers.green` holds the metric: prompt, reader,
math, signature). Needs `rexrank[models]`."""

from __future__ import annotations

import json
from pathlib import Path

from rexrank.errors import InputError
from rexrank.llm import Reply
from rexrank.llm.guard import DataUse
from rexrank.models import ModelUnavailable, ResolvedModel, resolve

MAX_LENGTH = 2048  # prompt plus answer, in tokens: the reference's max_length

# Verbatim from Stanford-AIMI/GREEN, green_score/green.py `GREEN.__init__` at d72c1951: set on the tokenizer in
# place of its own. Messages are {"from": "human" | "gpt" | "system", "value": ...}.
CHAT_TEMPLATE = (
    "{% for message in messages %}\n{% if message['from'] == 'human' %}\n{{ '<|user|>\n' + message['value'] + "
    "eos_token }}\n{% elif message['from'] == 'system' %}\n{{ '<|system|>\n' + message['value'] + eos_token }}\n"
    "{% elif message['from'] == 'gpt' %}\n{{ '<|assistant|>\n'  + message['value'] + eos_token }}\n{% endif %}\n"
    "{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}"
)


def local_identity(weights: str, dtype: str, max_length: int = MAX_LENGTH, remote_code: bool = False) -> str:
    """What a signature records of GREEN run here: the weights' identity, the precision, the length rule."""
    return f"{weights}:{dtype}:max_length={max_length}" + (":tokenizer=remote-code" if remote_code else "")


class LocalGreen:
    """GREEN's model run here with `transformers`, as the reference's `GREEN.get_response` runs it: its chat
    template, BOS + prompt + EOS, greedy decoding, EOS as padding on the left, at most `max_length` tokens in all
    per study. Batches are sorted by length (little padding); identical prompts run once. fp16 on CUDA as the
    reference, fp32 on the CPU (`dtype` overrides). Weights: `model` (a folder or `ResolvedModel`), else
    `rexrank.models.resolve("GREEN")` (`REXRANK_MODEL_GREEN`, `--model GREEN=...`, or the Hugging Face cache)."""

    def __init__(self, model: ResolvedModel | str | Path | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int = 8, max_length: int = MAX_LENGTH, progress: bool = True,
                 trust_remote_code: bool = False):
        try:
            import torch
            from transformers import AutoModelForCausalLM

            from rexrank.models.runtime import pick_device
        except ImportError as err:
            raise ModelUnavailable(f"GREEN's local model needs {err.name}: pip install 'rexrank[models]'") from None

        if dtype is not None and not isinstance(getattr(torch, dtype, None), torch.dtype):
            raise InputError(f"unknown dtype {dtype!r}: use float16, bfloat16 or float32")
        if model is None:
            model = resolve("GREEN")
        elif not isinstance(model, ResolvedModel):
            from rexrank.models import MODELS

            model = ResolvedModel(MODELS["GREEN"], Path(model).expanduser(), f"local folder {model}")
        folder = model.path
        if not (folder.is_dir() and (folder / "config.json").is_file()):
            raise ModelUnavailable(f"{model.spec.what}: {folder} must be a model folder with config.json, weights "
                                   "and tokenizer files")
        self.device = pick_device(device)
        self.dtype = getattr(torch, dtype) if dtype else torch.float16 if self.device.type == "cuda" else torch.float32
        self.tokenizer = _load_tokenizer(folder, trust_remote_code)
        self.remote_code = trust_remote_code and not (folder / "tokenizer.json").is_file()  # the repository's code ran
        try:
            net = AutoModelForCausalLM.from_pretrained(folder, dtype=self.dtype)
        except (OSError, ValueError, RuntimeError) as err:
            raise ModelUnavailable(f"{model.spec.what}: cannot load weights from {folder}: {err}") from None
        self.net = net.eval().to(self.device)
        self.model, self.batch_size, self.max_length, self.progress = model, batch_size, max_length, progress
        self.eos = self.tokenizer.eos_token_id

    @property
    def identity(self) -> str:
        return local_identity(self.model.identity, str(self.dtype).removeprefix("torch."), self.max_length,
                              self.remote_code)

    def input_ids(self, prompt: str | list[dict]) -> list[int]:
        """What the reference feeds the model for one prompt (its text, or chat messages: a system message, which the
        reference's template renders, and the user's)."""
        chat = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        messages = [*({"from": "system" if m["role"] == "system" else "human", "value": m["content"]} for m in chat),
                    {"from": "gpt", "value": ""}]
        text = self.tokenizer.apply_chat_template(messages, chat_template=CHAT_TEMPLATE, tokenize=False,
                                                  add_generation_prompt=True)
        ids = list(self.tokenizer(text)["input_ids"])
        return ids if ids and ids[-1] == self.eos else [*ids, self.eos]  # the reference's add_eos_token=True

    def complete(self, prompts: list[str] | list[list[dict]], prompt_version: str | None = None, *,
                 dataset: DataUse | str | None = None) -> list[Reply]:
        """One reply per prompt, in order; `prompt_version` and `dataset` are the judge's (nothing leaves here)."""
        from rexrank.models.runtime import run_batches

        keys = [p if isinstance(p, str) else json.dumps(p) for p in prompts]  # messages are lists: keyed as text
        by_key = dict(zip(keys, prompts))
        distinct = list(by_key)
        ids = [self.input_ids(by_key[k]) for k in distinct]
        answers: dict[str, Reply] = {}
        fits = []
        for prompt, tokens in zip(distinct, ids):
            if len(tokens) < self.max_length:
                fits.append((prompt, tokens))
            else:  # the reference would cut the prompt and answer one token; no answer is honest
                answers[prompt] = Reply(None, refused=True, error=f"prompt of {len(tokens)} tokens leaves no room "
                                                                  f"for an answer within max_length {self.max_length}")
        replies = run_batches([t for _, t in fits], [len(t) for _, t in fits], self.batch_size, self._generate,
                              "GREEN", self.progress)
        answers.update((prompt, reply) for (prompt, _), reply in zip(fits, replies))
        return [answers[k] for k in keys]

    def _generate(self, batch: list[list[int]]) -> list[Reply]:
        import torch

        width = max(len(ids) for ids in batch)
        budgets = [self.max_length - len(ids) for ids in batch]  # each study's own room: batch size 1's rule
        input_ids = torch.tensor([[self.eos] * (width - len(ids)) + ids for ids in batch], device=self.device)
        mask = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in batch], device=self.device)
        with torch.inference_mode():
            out = self.net.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max(budgets),
                                    do_sample=False, temperature=None, top_p=None, eos_token_id=self.eos,
                                    pad_token_id=self.eos)
        replies = []
        for row, budget in zip(out[:, width:].tolist(), budgets):
            row = row[:budget]
            finish = "stop" if self.eos in row else "length"
            row = row[:row.index(self.eos)] if self.eos in row else row
            text = self.tokenizer.decode(row, skip_special_tokens=True)  # raw: `clean_completion` does the rest
            replies.append(Reply(text, finish))
        return replies


def _load_tokenizer(folder: Path, trust_remote_code: bool):
    """A tokenizer.json is used as written (the reference's transformers 4 did so); transformers 5's LlamaTokenizer
    would rebuild it and tokenize the text after a special token differently. GREEN's own repository has none: its
    tokenizer is code it ships (`auto_map` to tokenization_chexagent.CheXagentTokenizer over tokenizer.model), which
    rexrank runs only when `trust_remote_code` says so (the signature then records it). Anything else: transformers
    converts the SentencePiece model."""

    from transformers import AutoTokenizer, PreTrainedTokenizerFast


    config = folder / "tokenizer_config.json"
    custom = config.is_file() and "auto_map" in json.loads(config.read_text(encoding="utf-8"))
    if custom and not (folder / "tokenizer.json").is_file() and not trust_remote_code:
        raise ModelUnavailable(
            f"GREEN tokenizer: {folder} ships its tokenizer as code (tokenizer_config.json's auto_map, no "
            "tokenizer.json), and rexrank runs downloaded code only when asked: pass --green-trust-remote-code "
            "(trust_remote_code=True; recorded in the signature), or serve GREEN with vLLM "
            "(rexrank.scorers.green.VLLM_COMMAND)")
    try:
        if (folder / "tokenizer.json").is_file():
            return PreTrainedTokenizerFast.from_pretrained(folder)
        return AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except (OSError, ValueError, ImportError) as err:
        raise ModelUnavailable(f"GREEN tokenizer: cannot load it from {folder}: {err}") from None
