"""BERT encoders (and sentence-embedding models such as all-MiniLM-L6-v2) as luminal.nn
modules: word + position + token-type embeddings, post-norm encoder layers, then mean pooling
over the attention mask and L2 normalization. Checkpoint keys (encoder.layer.N.attention.
self.query, ...) map onto our module names without copying. Not here: tokenization."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from .. import dtype as dt
from ..errors import WeightsError
from ..graph import Graph
from ..nn import masks
from ..nn import functional as F
from ..nn.layers import Embedding, LayerNorm
from ..nn.module import Module, ModuleList
from ..nn.transformer import TransformerEncoderLayer
from ..runtime import NativeRuntime
from .config import ConfigValues, open_pretrained, read_json, weights_dtype


@dataclass
class BertConfig:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_act: str = "gelu"

    @classmethod
    def from_dict(cls, c: dict, source: str = "BERT config.json") -> BertConfig:
        """The config of a config.json dict; every value checked, with a WeightsError naming
        ``source`` and the key."""
        v = ConfigValues(c, source)
        cfg = cls(v.int("vocab_size"), v.int("hidden_size"), v.int("num_hidden_layers"),
                  v.int("num_attention_heads"), v.int("intermediate_size"),
                  v.int("max_position_embeddings", 512), v.int("type_vocab_size", 2),
                  v.float("layer_norm_eps", 1e-12), v.str("hidden_act", "gelu"))
        v.divides("hidden_size", cfg.hidden_size, "num_attention_heads", cfg.num_attention_heads)
        if cfg.hidden_act != "gelu":
            raise WeightsError(f"{source}: hidden_act {cfg.hidden_act!r} is not supported "
                               f"(gelu is)")
        if v.str("position_embedding_type", "absolute") != "absolute":
            raise WeightsError(f"{source}: only absolute position embeddings are supported")
        return cfg


class BertEmbeddings(Module):
    def __init__(self, c: BertConfig, dtype):
        super().__init__()
        self.word_embeddings = Embedding(c.vocab_size, c.hidden_size, dtype)
        self.position_embeddings = Embedding(c.max_position_embeddings, c.hidden_size, dtype)
        self.token_type_embeddings = Embedding(c.type_vocab_size, c.hidden_size, dtype)
        self.LayerNorm = LayerNorm(c.hidden_size, c.layer_norm_eps, dtype=dtype)

    def forward(self, ids, token_type_ids):
        s = ids.st.dims[1]
        positions = ids.graph.iota("z", s).unsqueeze(0)
        x = self.word_embeddings(ids) + self.position_embeddings(positions)
        return self.LayerNorm(x + self.token_type_embeddings(token_type_ids))


class BertModel(Module):
    """ids, attention_mask, token_type_ids (batch, s) int32 -> hidden states (batch, s, dim)."""

    def __init__(self, config: BertConfig, dtype=dt.float32):
        super().__init__()
        self.config = config
        c = config
        self.embeddings = BertEmbeddings(c, dtype)
        self.layers = ModuleList(
            TransformerEncoderLayer(c.hidden_size, c.num_attention_heads, c.intermediate_size,
                                    c.layer_norm_eps, F.gelu, dtype)
            for _ in range(c.num_hidden_layers))
        self.weights = None

    def forward(self, ids, attention_mask, token_type_ids):
        x = self.embeddings(ids, token_type_ids)
        bias = masks.padding_bias(attention_mask)
        for layer in self.layers:
            x = layer(x, bias)
        return x

    @classmethod
    def from_pretrained(cls, model_dir, dtype=None):
        model_dir, config, weights = open_pretrained(model_dir, BertConfig, hf_to_luminal)
        if dtype is None:
            dtype = weights_dtype(weights._weights, _first_key(weights))
        model = cls(config, dt.to_dtype(dtype))
        model.weights = weights
        model.model_dir = model_dir
        return model

    def load_weights(self, runtime, weights=None) -> None:
        self.load_state_dict(runtime, weights if weights is not None else self.weights)


def mean_pool_normalize(hidden, attention_mask):
    """Mean of the unmasked token states, then L2-normalized: sentence-transformers' Pooling
    (mean) + Normalize. (batch, s, dim), (batch, s) -> (batch, dim)."""
    m = attention_mask.to(dt.float32).unsqueeze(-1)
    summed = (hidden * m).sum(1)
    count = m.sum(1)
    count = count + (count < 1e-9).to(dt.float32) * 1e-9
    mean = summed / count
    return F.normalize(mean, dim=-1)


_LAYER_NAMES = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.o_proj",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "mlp.fc1",
    "output.dense": "mlp.fc2",
    "output.LayerNorm": "norm2",
}
_LAYER_KEY = re.compile(r"^encoder\.layer\.(\d+)\.(.+)\.(weight|bias|gamma|beta)$")


def hf_to_luminal(key: str):
    """A Hugging Face BERT checkpoint key as our module name; None for tensors we do not use
    (the pooler, MLM heads, position_ids buffers)."""
    if key.startswith("bert."):
        key = key[len("bert."):]
    key = key.replace(".gamma", ".weight").replace(".beta", ".bias")
    if key.startswith("embeddings."):
        # position_ids / token_type_ids buffers are not weights
        return key if key.endswith((".weight", ".bias")) else None
    match = _LAYER_KEY.match(key)
    if match and match.group(2) in _LAYER_NAMES:
        return f"layers.{match.group(1)}.{_LAYER_NAMES[match.group(2)]}.{match.group(3)}"
    if key.startswith(("pooler.", "cls.")):
        return None
    return key


def _first_key(weights) -> str:
    key = "embeddings.word_embeddings.weight"
    return weights.locate(key)[1] if key in weights else next(iter(weights._weights))


class SentenceEmbedder:
    """A BERT sentence-embedding model compiled on a runtime: ``embed(texts)`` returns
    L2-normalized (n, dim) float32 embeddings. Batch and sequence length are symbolic."""

    def __init__(self, model_dir, runtime=None, search: int = 1, max_length: int | None = None):
        from .tokenizer import load_tokenizer

        model_dir = str(model_dir)
        self.model = BertModel.from_pretrained(model_dir)
        self.max_length = max_length or _sentence_max_length(model_dir) or \
            self.model.config.max_position_embeddings
        self.tokenizer = load_tokenizer(model_dir)
        self.tokenizer.no_padding()
        self.tokenizer.enable_padding(pad_id=_pad_id(self.tokenizer))
        self.tokenizer.enable_truncation(self.max_length)
        cx = Graph()
        self.graph = cx
        self.ids = cx.tensor(("b", "s"), dt.int32, "input_ids")
        self.mask = cx.tensor(("b", "s"), dt.int32, "attention_mask")
        self.types = cx.tensor(("b", "s"), dt.int32, "token_type_ids")
        hidden = self.model(self.ids, self.mask, self.types)
        self.embeddings = mean_pool_normalize(hidden, self.mask).output()
        runtime = runtime if runtime is not None else NativeRuntime()
        self.runtime = cx.search(runtime, search)
        self.model.load_weights(self.runtime)

    def tokenize(self, texts):
        import numpy as np

        enc = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], np.int32)
        mask = np.array([e.attention_mask for e in enc], np.int32)
        types = np.array([e.type_ids for e in enc], np.int32)
        return ids, mask, types

    def embed(self, texts):
        if isinstance(texts, str):
            texts = [texts]
        if not texts:
            raise ValueError("embed: no texts")
        ids, mask, types = self.tokenize(texts)
        return self.embed_tokens(ids, mask, types)

    def embed_tokens(self, ids, mask, types):
        rt = self.runtime
        with rt.sequence():  # callers in other threads wait their turn
            rt.set_data(self.ids, ids)
            rt.set_data(self.mask, mask)
            rt.set_data(self.types, types)
            rt.execute({"b": int(ids.shape[0]), "s": int(ids.shape[1])})
            return rt.get(self.embeddings)


def _sentence_max_length(model_dir: str):
    path = os.path.join(model_dir, "sentence_bert_config.json")
    return read_json(path).get("max_seq_length") if os.path.exists(path) else None


def _pad_id(tokenizer) -> int:
    pad = tokenizer.token_to_id("[PAD]")
    return 0 if pad is None else pad
