"""A pre-norm Transformer decoder block written with luminal ops (nn.functional and tensor
methods) against the same block written in plain torch, with the same random weights: a
Llama-style block (RMSNorm, grouped-query causal attention, SwiGLU MLP) and a GPT-style block
(LayerNorm with bias, causal attention, GELU MLP). The sequence length is symbolic: one
compiled program runs at several lengths."""

import math

import pytest
import torch

import luminal as lm
import luminal.nn.functional as F
from conftest import assert_close

DIM, HEADS, HIDDEN, BATCH = 16, 4, 32, 2


def make_weights(style: str, kv_heads: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    head_dim = DIM // HEADS

    def rand(*shape, scale=None):
        scale = scale if scale is not None else 1.0 / math.sqrt(shape[-1])
        return torch.randn(*shape, generator=g) * scale

    w = {
        "wq": rand(DIM, DIM), "wk": rand(kv_heads * head_dim, DIM),
        "wv": rand(kv_heads * head_dim, DIM), "wo": rand(DIM, DIM),
        "norm1": 1.0 + rand(DIM, scale=0.1), "norm2": 1.0 + rand(DIM, scale=0.1),
    }
    if style == "llama":
        w.update(gate=rand(HIDDEN, DIM), up=rand(HIDDEN, DIM), down=rand(DIM, HIDDEN))
    else:
        w.update(fc1=rand(HIDDEN, DIM), fc1_b=rand(HIDDEN, scale=0.1), fc2=rand(DIM, HIDDEN),
                 fc2_b=rand(DIM, scale=0.1), norm1_b=rand(DIM, scale=0.1),
                 norm2_b=rand(DIM, scale=0.1))
    return w


# ---- the block in torch, written out with plain tensor ops --------------------------------
def torch_norm(style, x, weight, bias):
    if style == "llama":
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    mean = x.mean(-1, keepdim=True)
    var = (x - mean).pow(2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias


def torch_block(style, x, w, kv_heads):
    b, t, _ = x.shape
    head_dim = DIM // HEADS
    h = torch_norm(style, x, w["norm1"], w.get("norm1_b"))
    q = (h @ w["wq"].T).view(b, t, HEADS, head_dim).transpose(1, 2)
    k = (h @ w["wk"].T).view(b, t, kv_heads, head_dim).transpose(1, 2)
    v = (h @ w["wv"].T).view(b, t, kv_heads, head_dim).transpose(1, 2)
    k = k.repeat_interleave(HEADS // kv_heads, dim=1)
    v = v.repeat_interleave(HEADS // kv_heads, dim=1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(head_dim)
    causal = torch.ones(t, t, dtype=torch.bool).tril()
    scores = scores.masked_fill(~causal, float("-inf"))
    attn = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, DIM)
    x = x + attn @ w["wo"].T
    h = torch_norm(style, x, w["norm2"], w.get("norm2_b"))
    if style == "llama":
        gate = h @ w["gate"].T
        mlp = (gate * torch.sigmoid(gate) * (h @ w["up"].T)) @ w["down"].T
    else:
        a = h @ w["fc1"].T + w["fc1_b"]
        a = 0.5 * a * (1.0 + torch.erf(a / math.sqrt(2.0)))
        mlp = a @ w["fc2"].T + w["fc2_b"]
    return x + mlp


# ---- the same block with luminal ops -------------------------------------------------------
def lm_norm(style, x, p, name):
    if style == "llama":
        return F.rms_norm(x, (DIM,), p[name], eps=1e-6)
    return F.layer_norm(x, (DIM,), p[name], p[name + "_b"], eps=1e-5)


def lm_block(style, x, p, kv_heads):
    b, t, _ = x.shape
    head_dim = DIM // HEADS
    h = lm_norm(style, x, p, "norm1")
    q = F.linear(h, p["wq"]).reshape(b, t, HEADS, head_dim).transpose(1, 2)
    k = F.linear(h, p["wk"]).reshape(b, t, kv_heads, head_dim).transpose(1, 2)
    v = F.linear(h, p["wv"]).reshape(b, t, kv_heads, head_dim).transpose(1, 2)
    attn = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    x = x + F.linear(attn.transpose(1, 2).reshape(b, t, DIM), p["wo"])
    h = lm_norm(style, x, p, "norm2")
    if style == "llama":
        mlp = F.linear(F.silu(F.linear(h, p["gate"])) * F.linear(h, p["up"]), p["down"])
    else:
        mlp = F.linear(F.gelu(F.linear(h, p["fc1"], p["fc1_b"])), p["fc2"], p["fc2_b"])
    return x + mlp


@pytest.mark.parametrize("style,kv_heads", [("llama", 2), ("gpt", HEADS)])
def test_block_matches_torch_at_several_lengths(style, kv_heads, runtime):
    w = make_weights(style, kv_heads)
    cx = lm.Graph()
    x = cx.tensor((BATCH, "s", DIM), name="x")
    params = {name: cx.tensor(tuple(value.shape), name=name) for name, value in w.items()}
    out = lm_block(style, x, params, kv_heads).output()
    rt = cx.search(runtime(), 1)
    for name, value in w.items():
        rt.set_data(params[name], value)
    for length in (5, 9, 1):
        data = torch.randn(BATCH, length, DIM, generator=torch.Generator().manual_seed(length))
        rt.set_data(x, data)
        cx.set_dim("s", length)
        rt.execute(cx.dyn_map)
        expected = torch_block(style, data, w, kv_heads)
        assert_close(rt.get(out), expected, rtol=1e-4, atol=1e-4)


def test_block_detects_a_wrong_weight(runtime):
    """The comparison has teeth: a block fed one transposed weight no longer matches."""
    w = make_weights("llama", 2)
    cx = lm.Graph()
    x = cx.tensor((BATCH, 4, DIM))
    params = {name: cx.tensor(tuple(value.shape), name=name) for name, value in w.items()}
    out = lm_block("llama", x, params, 2).output()
    rt = cx.search(runtime(), 1)
    for name, value in w.items():
        rt.set_data(params[name], value.T.contiguous() if name == "wo" else value)
    data = torch.randn(BATCH, 4, DIM)
    rt.set_data(x, data)
    rt.execute(cx.dyn_map)
    with pytest.raises(AssertionError):
        assert_close(rt.get(out), torch_block("llama", data, w, 2), rtol=1e-4, atol=1e-4)
