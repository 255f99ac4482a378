"""Reading a Hugging Face model directory: config.json, its weights opened, their dtype, and
which files are there; ConfigValues, the one place a model config's (or GGUF metadata's)
values are checked for type and range. Errors name the file and the key. Not here: model
definitions."""

from __future__ import annotations

import json
import os

from .. import dtype as dt
from ..errors import WeightsError
from ..weights.renamed import RenamedWeights
from ..weights.safetensors import load_safetensors


def read_json(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise WeightsError(f"{path}: file not found") from None
    except ValueError as e:  # bad JSON, bad UTF-8, an integer of too many digits
        raise WeightsError(f"{path}: not valid JSON ({e})") from None
    except RecursionError:
        raise WeightsError(f"{path}: not valid JSON (nested too deeply)") from None
    except OSError as e:
        raise WeightsError(f"{path}: cannot read ({e.strerror})") from None


def read_config(model_dir: str) -> dict:
    if not os.path.isdir(model_dir):
        raise WeightsError(f"{model_dir}: not a model directory")
    path = os.path.join(model_dir, "config.json")
    return ConfigValues(read_json(path), path).values


def open_pretrained(model_dir, config_cls, rename=None):
    """What every from_pretrained reads first: (``model_dir`` as a str, ``config_cls`` from its
    checked config.json, its safetensors as a lazy mapping, seen through ``rename`` if given)."""
    model_dir = str(model_dir)
    config = config_cls.from_dict(read_config(model_dir), os.path.join(model_dir, "config.json"))
    weights = load_safetensors(model_dir)
    if rename is not None:
        weights = RenamedWeights(weights, rename)
    return model_dir, config, weights


def weights_dtype(weights, probe: str):
    """The luminal dtype tensor ``probe`` is stored in (f32 for anything not f16/bf16)."""
    kind = weights.dtype_name(probe) if probe in weights else "F32"
    return {"F16": dt.float16, "BF16": dt.bfloat16}.get(kind, dt.float32)


_REQUIRED = object()


class ConfigValues:
    """Typed reads of a config dict: each value checked for its type and range, with a
    WeightsError naming ``source`` and the key. ``source``: "path/config.json", or a GGUF
    file's metadata."""

    def __init__(self, values, source: str):
        if not isinstance(values, dict):
            raise WeightsError(f"{source}: the config is a {type(values).__name__}, not an "
                               f"object of keys")
        self.values = values
        self.source = source

    def _get(self, key: str, default):
        value = self.values.get(key)
        if value is None:
            if default is _REQUIRED:
                raise WeightsError(f"{self.source}: lacks {key!r}")
            return default
        return value

    def _bad(self, key: str, value, want: str) -> WeightsError:
        return WeightsError(f"{self.source}: {key!r} is {value!r}, it must be {want}")

    def int(self, key: str, default=_REQUIRED, minimum: int = 1) -> int | None:
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self._bad(key, value, f"an integer >= {minimum}")
        return value

    def float(self, key: str, default=_REQUIRED, positive: bool = True) -> float | None:
        value = self._get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                value != value or (positive and not value > 0):
            raise self._bad(key, value, "a positive number" if positive else "a number")
        return float(value)

    def bool(self, key: str, default: bool = False) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._bad(key, value, "true or false")
        return value

    def str(self, key: str, default=_REQUIRED) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._bad(key, value, "a string")
        return value

    def floats(self, key: str, length: int) -> list:
        """A required list of ``length`` positive numbers."""
        value = self._get(key, _REQUIRED)
        if not isinstance(value, list) or len(value) != length or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in value):
            raise self._bad(key, value, f"a list of {length} positive numbers")
        return [float(x) for x in value]

    def token_ids(self, key: str) -> list | None:
        """An optional token id or list of them, as a list."""
        value = self._get(key, None)
        if value is None:
            return None
        ids = value if isinstance(value, list) else [value]
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            raise self._bad(key, value, "a token id or a list of them")
        return ids

    def section(self, *keys: str) -> ConfigValues | None:
        """The first of ``keys`` that holds an object, as ConfigValues (None: none does)."""
        for key in keys:
            value = self.values.get(key)
            if value is not None:
                if not isinstance(value, dict):
                    raise self._bad(key, value, "an object of keys")
                return ConfigValues(value, f"{self.source} [{key}]")
        return None

    def divides(self, key: str, value: int, by_key: str, by: int) -> None:
        if value % by:
            raise WeightsError(f"{self.source}: {key!r} ({value}) is not a multiple of "
                               f"{by_key!r} ({by})")
