"""The two kinds of `transformers` model rexrank's inference runner (rexrank.inference.hf_runner) generates with:
an image-text-to-text model through its processor's chat template, or a vision-encoder-decoder model from one
image. Weights come from the local Hugging Face cache only, never with remote code; decoding is greedy, a batch of
studies at a time (rexrank.inference.batching says why that gives each study the text it gets alone)."""

from __future__ import annotations


class ModelError(Exception):
    """The model cannot be loaded, or is not a kind this module runs: one line for the user."""


def messages(images: list, text: str) -> list[dict]:
    """One user turn: the images, in order, then the instruction (the shape transformers' chat templates take)."""
    return [{"role": "user", "content": [*({"type": "image", "image": image} for image in images),
                                         {"type": "text", "text": text}]}]


def generated_length(row: list[int], eos: set[int]) -> int:
    """Tokens a row generated: up to its first end-of-sequence token, that one included (a batch pads the rows
    that ended first)."""
    return next((i + 1 for i, token in enumerate(row) if token in eos), len(row))


def eos_ids(*values) -> set[int]:
    ids = next((v for v in values if v is not None), None)
    return set(ids) if isinstance(ids, list | tuple) else {ids} if ids is not None else set()


class Generator:
    """Loads the model once; `generate_batch([(images, text), ...])` returns each study's (text, tokens)."""

    kind = "image-text-to-text"
    reads_prompt = True

    def __init__(self, repo: str, revision: str, device: str, dtype, max_new_tokens: int):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        self.torch, self.device, self.max_new_tokens = torch, device, max_new_tokens
        where = {"revision": revision, "local_files_only": True, "trust_remote_code": False}
        self.processor = AutoProcessor.from_pretrained(repo, **where)
        self.model = AutoModelForImageTextToText.from_pretrained(repo, dtype=dtype, **where).to(device)
        self.model.eval()
        # Left: each row's answer follows its own last prompt token; right padding would put pads in between.
        self.processor.tokenizer.padding_side = "left"
        self.eos = eos_ids(self.model.generation_config.eos_token_id, self.processor.tokenizer.eos_token_id)

    def inputs(self, studies: list[tuple[list, str]]):
        inputs = self.processor.apply_chat_template(
            [messages(images, text) for images, text in studies], add_generation_prompt=True, tokenize=True,
            return_dict=True, return_tensors="pt", processor_kwargs={"padding": True})
        return inputs.to(self.device, dtype=self.model.dtype)  # dtype: floating tensors (pixel values) only

    def study_bytes(self, images: list, text: str) -> int:
        """GPU memory one more study of this shape takes in a batch (rexrank.inference.batching)."""
        from rexrank.inference.batching import MARGIN, kv_cache_bytes

        tokens = self.inputs([(images, text)])["input_ids"].shape[1] + self.max_new_tokens
        return MARGIN * kv_cache_bytes(self.model.config, tokens, self.model.dtype.itemsize)

    def generate_batch(self, studies: list[tuple[list, str]]) -> list[tuple[str, int]]:
        inputs = self.inputs(studies)
        with self.torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      num_beams=1)
        new = out[:, inputs["input_ids"].shape[1]:].tolist()
        return [(self.processor.decode(row[:n], skip_special_tokens=True).strip(), n)
                for row in new for n in [generated_length(row, self.eos)]]

    def generate(self, images: list, text: str) -> tuple[str, int]:
        return self.generate_batch([(images, text)])[0]


class EncoderDecoderGenerator(Generator):
    kind = "vision-encoder-decoder"
    reads_prompt = False

    def __init__(self, repo: str, revision: str, device: str, dtype, max_new_tokens: int):
        import torch
        from transformers import AutoImageProcessor, AutoTokenizer, VisionEncoderDecoderModel

        self.torch, self.device, self.max_new_tokens = torch, device, max_new_tokens
        where = {"revision": revision, "local_files_only": True, "trust_remote_code": False}
        self.image_processor = AutoImageProcessor.from_pretrained(repo, **where)
        self.tokenizer = AutoTokenizer.from_pretrained(repo, **where)
        self.model = VisionEncoderDecoderModel.from_pretrained(repo, dtype=dtype, **where).to(device)
        self.model.eval()
        config, generation, tok = self.model.config, self.model.generation_config, self.tokenizer

        def first(*values):
            return next((v for v in values if v is not None), None)

        # Models saved before transformers kept these in generation_config.json have them in config.json, or only in
        # the tokenizer (BERT decoders start at [CLS] and stop at [SEP]).
        self.ids = {
            "decoder_start_token_id": first(generation.decoder_start_token_id, config.decoder_start_token_id,
                                            tok.cls_token_id, tok.bos_token_id),
            "eos_token_id": first(generation.eos_token_id, config.eos_token_id, tok.sep_token_id, tok.eos_token_id),
            "pad_token_id": first(generation.pad_token_id, config.pad_token_id, tok.pad_token_id),
        }
        if self.ids["decoder_start_token_id"] is None:
            raise ModelError(f"{repo}@{revision[:12]}: no decoder start token in its config or tokenizer")
        self.eos = eos_ids(self.ids["eos_token_id"])

    def study_bytes(self, images: list, text: str) -> int:
        """The decoder's own keys and values and its cross-attention's over the encoder's patches."""
        from rexrank.inference.batching import MARGIN, kv_cache_bytes

        encoder = self.model.config.encoder
        patches = (getattr(encoder, "image_size", 224) // getattr(encoder, "patch_size", 16)) ** 2 + 1
        tokens = self.max_new_tokens + 1 + patches
        return MARGIN * kv_cache_bytes(self.model.config, tokens, self.model.dtype.itemsize)

    def generate_batch(self, studies: list[tuple[list, str]]) -> list[tuple[str, int]]:
        images = [study_images[0] for study_images, _ in studies]  # one image each; no prompt
        pixels = self.image_processor(images=images, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self.device, dtype=self.model.dtype)
        with self.torch.inference_mode():
            out = self.model.generate(pixel_values=pixels, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, num_beams=1, **self.ids)
        new = out[:, 1:].tolist()  # after the decoder's start token
        return [(self.tokenizer.decode(row[:n], skip_special_tokens=True).strip(), n)
                for row in new for n in [generated_length(row, self.eos)]]


def load_generator(repo: str, revision: str, device: str | None, max_new_tokens: int) -> tuple[Generator, str, str]:
    """The generator for the model's architecture, its device and dtype (device None: cuda when available, else
    cpu); ModelError when the model is not in the cache or is not a standard transformers image-text-to-text /
    vision-encoder-decoder model."""
    import torch
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES
    from transformers.utils import logging

    logging.disable_progress_bar()  # the log is a file: one line per study, not a bar redrawn with \r

    pinned = f"{repo}@{revision[:12]}"
    try:
        config = AutoConfig.from_pretrained(repo, revision=revision, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{pinned} cannot be loaded from the local Hugging Face cache (HF_HUB_OFFLINE): {first}") \
            from None
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    # The weights' own dtype on a GPU; float32 on a CPU, where bf16 is several times slower.
    dtype = "auto" if device.startswith("cuda") else torch.float32
    if config.model_type == "vision-encoder-decoder":
        cls = EncoderDecoderGenerator
    elif config.model_type in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES:
        cls = Generator
    else:
        raise ModelError(f"{pinned} is a {config.model_type!r} model ({', '.join(config.architectures or [])}): "
                         f"rexrank's runner takes a transformers image-text-to-text or vision-encoder-decoder "
                         f"model; ship an inference.py for this one")
    try:
        generator = cls(repo, revision, device, dtype, max_new_tokens)
    except (OSError, ValueError, KeyError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelError(f"{pinned} cannot be loaded: {first}") from None
    return generator, device, str(generator.model.dtype).removeprefix("torch.")
