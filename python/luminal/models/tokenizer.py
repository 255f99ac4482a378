"""Tokenizer glue: a model directory's tokenizer.json through the ``tokenizers`` package, the
tokenizer a llama.cpp GGUF file carries in its metadata, and incremental decoding for
streaming. Errors say what to install or which file is missing."""

from __future__ import annotations

import os

from ..errors import WeightsError


def load_tokenizer(model_dir: str):
    path = os.path.join(str(model_dir), "tokenizer.json")
    if not os.path.exists(path):
        raise WeightsError(f"{model_dir}: no tokenizer.json")
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ImportError("luminal needs the 'tokenizers' package to read tokenizer.json: "
                          "pip install tokenizers") from None
    try:
        return Tokenizer.from_file(path)
    except Exception as e:  # the tokenizers package raises plain Exceptions for bad files
        raise WeightsError(f"{path}: not a tokenizer the tokenizers package reads "
                           f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def load_gguf_tokenizer(path: str, beside: str | None = None):
    """The tokenizer a GGUF file describes in its ``tokenizer.ggml.*`` metadata (llama.cpp's
    SentencePiece "llama" and byte-level BPE "gpt2" vocabularies, with their merges, special
    tokens and pre-tokenizer), rebuilt as a ``tokenizers`` Tokenizer by transformers' GGUF
    converter, so it encodes as transformers does for that file. A file without one takes the
    tokenizer.json of directory ``beside`` where there is one."""
    try:
        from transformers.integrations.gguf import convert_gguf_tokenizer, get_gguf_tokenizer
    except ImportError:
        raise ImportError("luminal reads a GGUF file's own tokenizer with transformers >= 5: "
                          "pip install -U transformers (or give --tokenizer DIR with a "
                          "tokenizer.json)") from None
    try:
        architecture, vocabulary, _ = get_gguf_tokenizer(str(path))
    except (KeyError, ValueError, OSError) as e:
        raise WeightsError(f"{path}: cannot read its tokenizer metadata ({e})") from None
    if not vocabulary.get("tokens"):
        if beside is not None and os.path.exists(os.path.join(beside, "tokenizer.json")):
            return load_tokenizer(beside)
        raise WeightsError(f"{path}: holds no tokenizer (no tokenizer.ggml.tokens); give "
                           f"--tokenizer DIR with a tokenizer.json, or put one beside it")
    try:
        tokenizer, _ = convert_gguf_tokenizer(architecture, vocabulary)
    except Exception as e:  # the converter raises what its builders raise
        raise WeightsError(f"{path}: its tokenizer ({vocabulary.get('tokenizer_type')!r}) "
                           f"could not be rebuilt ({type(e).__name__}: {e})") from None
    return tokenizer


class StreamDecoder:
    """Turns token ids, one at a time, into the new text each adds (decoding the whole
    sequence so multi-token characters and word joins come out right)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids = []
        self.text = ""

    def push(self, token_id: int) -> str:
        self.ids.append(int(token_id))
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return ""  # an incomplete UTF-8 sequence: wait for the next token
        new = text[len(self.text):] if text.startswith(self.text) else text
        self.text = text
        return new
