"""Tokenizer glue: a model directory's tokenizer.json through the ``tokenizers`` package,
and incremental decoding for streaming. Errors say what to install or which file is missing."""

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
