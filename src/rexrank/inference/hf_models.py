"""The two kinds of `transformers` model rexrank's inference runner (rexrank.inference.hf_runner) generates with:
an image-text-to-text model through its processor's chat template, or a vision-encoder-decoder model from one
image. Weights come from the local Hugging Face cache only, never with remote code; decoding is greedy."""

from __future__ import annotations


class ModelError(Exception):
    """The model cannot be loaded, or is not a kind this module runs: one line for the user."""


def messages(images: list, text: str) -> list[dict]:
    """One user turn: the images, in order, then the instruction (the shape transformers' chat templates take)."""
    return [{"role": "user", "content": [*({"type": "image", "image": image} for image in images),
                                         {"type": "text", "text": text}]}]



class Generator:
    """Loads the model once; `generate(images, text)` returns the model's text for one study."""

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

    def generate(self, images: list, text: str) -> tuple[str, int]:
        inputs = self.processor.apply_chat_template(
            messages(images, text), add_generation_prompt=True, tokenize=True, return_dict=True,
            return_tensors="pt")
        inputs = inputs.to(self.device, dtype=self.model.dtype)  # dtype: floating tensors (pixel values) only
        prompt_length = inputs["input_ids"].shape[1]
        with self.torch.inference_mode():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False,
                                      num_beams=1)
        new = out[0, prompt_length:]
        return self.processor.decode(new, skip_special_tokens=True).strip(), int(new.shape[0])


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

    def generate(self, images: list, text: str) -> tuple[str, int]:
        [image] = images[:1]
        pixels = self.image_processor(images=image, return_tensors="pt")["pixel_values"]
        pixels = pixels.to(self.device, dtype=self.model.dtype)
        with self.torch.inference_mode():
            out = self.model.generate(pixel_values=pixels, max_new_tokens=self.max_new_tokens,
                                      do_sample=False, num_beams=1, **self.ids)
        return self.tokenizer.decode(out[0], skip_special_tokens=True).strip(), int(out.shape[1]) - 1  # - start


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
