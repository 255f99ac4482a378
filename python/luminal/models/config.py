"""Reading a Hugging Face model directory: config.json, the weights' dtype, and which files
are there. Errors name the directory and what is missing. Not here: model definitions."""

from __future__ import annotations

import json
import os

from .. import dtype as dt
from ..errors import WeightsError


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise WeightsError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise WeightsError(f"{path}: not valid JSON ({e})") from None


def read_config(model_dir: str) -> dict:
    if not os.path.isdir(model_dir):
        raise WeightsError(f"{model_dir}: not a model directory")
    return read_json(os.path.join(model_dir, "config.json"))


def weights_dtype(weights, probe: str):
    """The luminal dtype tensor ``probe`` is stored in (f32 for anything not f16/bf16)."""
    kind = weights.dtype_name(probe) if probe in weights else "F32"
    return {"F16": dt.float16, "BF16": dt.bfloat16}.get(kind, dt.float32)
