"""A Hugging Face Llama directory written as a llama.cpp GGUF (``luminal quantize``): tensor
names and the q/k row order llama.cpp uses (models/llama_gguf.py, whose reader is the inverse),
the ``llama.*`` metadata, Llama 3 rope scaling as a rope_freqs tensor, the tokenizer from
tokenizer.json as tokenizer.ggml.* (byte-level BPE as "gpt2", else "llama"), and the weights
in one type: 2-D weights quantized (weights/quantize.py; rows that are not whole blocks in
F16; q4_k and q5_k as llama.cpp's Q4_K_M and Q5_K_M, with some tensors in Q6_K:
_tensor_type), 1-D ones in F32.
Not here: the GGUF format (weights/gguf_write.py)."""

from __future__ import annotations

import json
import os

import numpy as np

from .. import _core
from .. import dtype as dt
from ..errors import WeightsError
from ..nn.rotary import default_inv_freq
from ..weights import gguf as gg
from ..weights.gguf_write import FLOAT32, Tensor, Typed, write_gguf
from ..weights.quantize import quantize
from ..weights.safetensors import load_safetensors
from .config import read_config
from .decoder_config import DecoderConfig
from .llama_gguf import gguf_name, permute

TYPES = {"q8_0": dt.q8_0, "q4_0": dt.q4_0, "q4_k": dt.q4_k, "q5_k": dt.q5_k, "q6_k": dt.q6_k,
         "f16": dt.float16}
# llama.cpp's general.file_type (llama_ftype) of each --type
_FILE_TYPE = {"f16": 1, "q4_0": 2, "q8_0": 7, "q4_k": 15, "q5_k": 17, "q6_k": 18}
_NORMAL, _CONTROL, _BYTE = 1, 3, 6  # llama.cpp token types


def _tensor(name: str, array: np.ndarray, dtype) -> Tensor:
    if dtype == dt.float32 or array.ndim == 1:
        return Tensor(name, array.shape, gg.GGML_F32, np.ascontiguousarray(array, np.float32))
    if dtype == dt.float16 or array.shape[-1] % _core.block_values(dtype):
        return Tensor(name, array.shape, gg.GGML_F16, array.astype(np.float16))
    rows = array.reshape(-1, array.shape[-1])
    return Tensor(name, array.shape, gg.GGML_TYPE_OF[dtype], quantize(rows, dtype))


def _metadata(c: DecoderConfig, name: str, kind: str) -> dict:
    md = {
        "general.architecture": "llama", "general.name": name,
        "general.file_type": _FILE_TYPE[kind], "general.quantization_version": 2,
        "llama.vocab_size": c.vocab_size, "llama.context_length": c.max_position_embeddings,
        "llama.embedding_length": c.hidden_size, "llama.block_count": c.num_hidden_layers,
        "llama.feed_forward_length": c.intermediate_size,
        "llama.rope.dimension_count": c.head_dim,
        "llama.attention.head_count": c.num_attention_heads,
        "llama.attention.head_count_kv": c.num_key_value_heads,
        "llama.attention.layer_norm_rms_epsilon": float(c.rms_norm_eps),
        "llama.rope.freq_base": float(c.rope.theta),
    }
    if c.bos_token_id is not None:
        md["tokenizer.ggml.bos_token_id"] = int(c.bos_token_id)
    if c.eos_token_id:
        md["tokenizer.ggml.eos_token_id"] = int(c.eos_token_id[0])
    return md


def _tokenizer_metadata(model_dir: str, vocab_size: int) -> dict:
    """tokenizer.ggml.* from tokenizer.json ({} without one)."""
    path = os.path.join(model_dir, "tokenizer.json")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    model = spec.get("model", {})
    vocab = model.get("vocab", {})
    if model.get("type") == "Unigram":  # [[token, score], ...] in id order
        vocab = {token: i for i, (token, _) in enumerate(vocab)}
    elif model.get("type") not in ("BPE", "WordLevel"):
        raise WeightsError(f"{path}: a {model.get('type')} tokenizer; luminal quantize writes "
                           f"BPE, WordLevel and Unigram tokenizers")
    tokens = [f"[PAD{i}]" for i in range(vocab_size)]
    types = [_CONTROL] * vocab_size  # ids no token has: unused, as llama.cpp pads
    for token, i in vocab.items():
        if i < vocab_size:
            tokens[i], types[i] = token, _BYTE if token.startswith("<0x") else _NORMAL
    for added in spec.get("added_tokens", []):
        if added["id"] < vocab_size:
            tokens[added["id"]] = added["content"]
            types[added["id"]] = _CONTROL if added.get("special") else _NORMAL
    byte_level = "ByteLevel" in json.dumps(spec.get("pre_tokenizer"))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    md = {"tokenizer.ggml.model": "gpt2" if byte_level else "llama",
          "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
          "tokenizer.ggml.scores": [Typed(FLOAT32, -float(i)) for i in range(vocab_size)]}
    if byte_level:
        md["tokenizer.ggml.pre"] = "default"
        md["tokenizer.ggml.merges"] = merges
    return md


def write_llama_gguf(model_dir, out_path, kind: str = "q8_0") -> None:
    """Writes the Llama of ``model_dir`` to ``out_path`` with 2-D weights in ``kind``
    (q8_0, q4_0, q4_k, q5_k, q6_k or f16)."""
    model_dir = os.fspath(model_dir)
    if kind not in TYPES:
        raise WeightsError(f"luminal quantize: --type {kind!r} is not one of {', '.join(TYPES)}")
    raw = read_config(model_dir)
    if raw.get("model_type", "llama") != "llama":
        raise WeightsError(f"{model_dir}: a {raw.get('model_type')!r} model; luminal quantize "
                           f"writes Llama models")
    c = DecoderConfig.from_dict(raw, os.path.join(model_dir, "config.json"))
    weights = load_safetensors(model_dir)
    heads = {"attn_q": c.num_attention_heads, "attn_k": c.num_key_value_heads}
    tensors = []
    for name in sorted(weights.keys(), key=_file_order):
        gname = gguf_name(name)
        if gname is None or (gname == "output.weight" and c.tie_word_embeddings):
            continue
        array = np.asarray(weights[name], np.float32)
        part = gname.split(".")[-2]
        if part in heads:
            array = permute(array, heads[part])
        dtype = _tensor_type(kind, gname, c)
        tensors.append(_tensor(gname, array, dtype))
    scaled = c.inv_freq()
    base = default_inv_freq(c.head_dim, c.rope.theta)
    if not np.array_equal(scaled, base):  # llama.cpp keeps Llama 3 scaling as divisors
        tensors.append(_tensor("rope_freqs.weight", (base / scaled).astype(np.float32),
                               dt.float32))
    metadata = _metadata(c, os.path.basename(os.path.abspath(model_dir)), kind)
    metadata.update(_tokenizer_metadata(model_dir, c.vocab_size))
    write_gguf(out_path, metadata, tensors)


def _tensor_type(kind: str, gname: str, c: DecoderConfig):
    """The type of tensor ``gname`` in a ``kind`` file: llama.cpp's Q4_K_M and Q5_K_M recipes
    for q4_k and q5_k (Q6_K for the output projection, or the embedding that serves as it, and
    for attn_v and ffn_down in the first and last eighth of the layers and every third between),
    else ``kind``'s."""
    if kind not in ("q4_k", "q5_k"):
        return TYPES[kind]
    if gname == "output.weight" or (gname == "token_embd.weight" and c.tie_word_embeddings):
        return dt.q6_k
    parts = gname.split(".")
    if parts[0] == "blk" and parts[2] in ("attn_v", "ffn_down"):
        layer, layers = int(parts[1]), c.num_hidden_layers
        if layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2:
            return dt.q6_k
    return TYPES[kind]


def _file_order(name: str):
    """Embeddings first, then the layers in order, then the final norm and head."""
    parts = name.split(".")
    if len(parts) > 2 and parts[1] == "layers":
        return (1, int(parts[2]), name)
    return (0 if "embed" in name else 2, 0, name)
