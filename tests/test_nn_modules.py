"""luminal.nn modules against torch.nn: each module built in a graph, its weights loaded
from the torch module's state_dict, outputs compared. Attention with grouped-query heads
and a KV cache runs a prefill and decode steps through one compiled program."""

import numpy as np
import pytest

import luminal as lm
from luminal.nn import (
    MLP,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    Embedding,
    KVCache,
    KVCacheBuffers,
    LayerNorm,
    Linear,
    Module,
    ModuleList,
    MultiHeadAttention,
    RMSNorm,
    RotaryEmbedding,
    Sequential,
    SwiGLU,
    TransformerDecoderLayer,
    default_inv_freq,
)

from conftest import CpuRuntime

torch = pytest.importorskip("torch")
F = torch.nn.functional


def run_module(module, state_dict, inputs, dims=None):
    """Builds ``module`` on graph inputs shaped like ``inputs`` (dict name -> (array,
    graph_shape)), loads ``state_dict``, returns the output as numpy."""
    cx = lm.Graph()
    tensors = {}
    for name, (array, shape, dtype) in inputs.items():
        tensors[name] = cx.tensor(shape, dtype, name)
    y = module(*tensors.values()).output()
    rt = cx.search(lm.NativeRuntime())
    module.load_state_dict(rt, state_dict)
    for name, (array, _, _) in inputs.items():
        rt.set_data(tensors[name], array)
    rt.execute(dims or {})
    return rt.get(y)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(a, b.detach().numpy(), rtol=tol, atol=tol)


def test_linear_with_symbolic_rows():
    torch.manual_seed(0)
    ref = torch.nn.Linear(6, 5)
    x = torch.randn(2, 3, 6)
    out = run_module(Linear(6, 5), ref.state_dict(), {"x": (x, (2, "s", 6), lm.float32)},
                     {"s": 3})
    close(out, ref(x))


def test_linear_checks_its_input():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match="in_features=6"):
        Linear(6, 5)(cx.tensor((2, 4)))


def test_embedding():
    torch.manual_seed(0)
    ref = torch.nn.Embedding(10, 4)
    ids = torch.tensor([[1, 9, 0], [3, 3, 7]])
    out = run_module(Embedding(10, 4), ref.state_dict(), {"ids": (ids, (2, 3), lm.int32)})
    close(out, ref(ids))


def test_layer_norm_and_rms_norm():
    torch.manual_seed(0)
    ln = torch.nn.LayerNorm(8, eps=1e-6)
    rms = torch.nn.RMSNorm(8, eps=1e-6)
    with torch.no_grad():
        for p in list(ln.parameters()) + list(rms.parameters()):
            p.normal_()
    x = torch.randn(3, 8) * 4 + 1
    close(run_module(LayerNorm(8, 1e-6), ln.state_dict(), {"x": (x, (3, 8), lm.float32)}), ln(x))
    close(run_module(RMSNorm(8, 1e-6), rms.state_dict(), {"x": (x, (3, 8), lm.float32)}),
          rms(x))


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2, padding=1),
    dict(padding=2, dilation=2, groups=2),
])
def test_conv1d(kw):
    torch.manual_seed(0)
    ref = torch.nn.Conv1d(4, 6, 3, **kw)
    x = torch.randn(2, 4, 9)
    close(run_module(Conv1d(4, 6, 3, **kw), ref.state_dict(), {"x": (x, (2, 4, 9), lm.float32)}),
          ref(x))


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=(2, 1), padding=1, bias=False),
    dict(padding=1, groups=2),
])
def test_conv2d(kw):
    torch.manual_seed(0)
    ref = torch.nn.Conv2d(2, 4, (3, 2), **kw)
    x = torch.randn(1, 2, 5, 6)
    out = run_module(Conv2d(2, 4, (3, 2), **kw), ref.state_dict(),
                     {"x": (x, (1, 2, 5, 6), lm.float32)})
    close(out, ref(x))


def test_batch_norm2d_in_a_sequential_matches_torch_eval():
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1, bias=False),
                              torch.nn.BatchNorm2d(4, eps=1e-3)).eval()
    bn = ref[1]
    bn.weight.data.uniform_(0.5, 1.5)
    bn.bias.data.uniform_(-1, 1)
    bn.running_mean.uniform_(-1, 1)
    bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 5, 6)
    ours = Sequential([Conv2d(3, 4, 3, padding=1, bias=False), BatchNorm2d(4, eps=1e-3)])
    state = {k: v for k, v in ref.state_dict().items() if not k.endswith("num_batches_tracked")}
    out = run_module(ours, state, {"x": (x, (2, 3, 5, 6), lm.float32)})
    close(out, ref(x))


def test_batch_norm2d_checks_its_input():
    cx = lm.Graph()
    with pytest.raises(lm.ShapeError, match="BatchNorm2d.*4-D"):
        BatchNorm2d(4)(cx.tensor((4, 5)))


def test_mlp_gelu_and_swiglu():
    torch.manual_seed(0)
    fc1, fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
    x = torch.randn(2, 8) * 3
    sd = {"fc1." + k: v for k, v in fc1.state_dict().items()}
    sd.update({"fc2." + k: v for k, v in fc2.state_dict().items()})
    close(run_module(MLP(8, 16), sd, {"x": (x, (2, 8), lm.float32)}), fc2(F.gelu(fc1(x))))
    gate, up, down = (torch.nn.Linear(8, 16, bias=False), torch.nn.Linear(8, 16, bias=False),
                      torch.nn.Linear(16, 8, bias=False))
    sd = {"gate_proj.weight": gate.weight, "up_proj.weight": up.weight,
          "down_proj.weight": down.weight}
    close(run_module(SwiGLU(8, 16), sd, {"x": (x, (2, 8), lm.float32)}),
          down(F.silu(gate(x)) * up(x)))


def _rope_ref(x, inv_freq, positions):
    freqs = torch.outer(positions.float(), torch.from_numpy(inv_freq))
    emb = torch.cat([freqs, freqs], -1)
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * emb.cos() + rotated * emb.sin()


def _attention_ref(x, attn_sd, heads, kv_heads, inv_freq, past=None):
    """torch reference: projections, RoPE, repeated kv heads, causal SDPA. ``past`` = (k, v)
    of earlier positions (after RoPE)."""
    b, s, _ = x.shape
    hd = attn_sd["q_proj.weight"].shape[0] // heads
    q = F.linear(x, attn_sd["q_proj.weight"]).view(b, s, heads, hd).transpose(1, 2)
    k = F.linear(x, attn_sd["k_proj.weight"]).view(b, s, kv_heads, hd).transpose(1, 2)
    v = F.linear(x, attn_sd["v_proj.weight"]).view(b, s, kv_heads, hd).transpose(1, 2)
    p = 0 if past is None else past[0].shape[2]
    positions = torch.arange(p, p + s)
    q, k = _rope_ref(q, inv_freq, positions), _rope_ref(k, inv_freq, positions)
    if past is not None:
        k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
    rep = heads // kv_heads
    kr, vr = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    mask = torch.ones(s, p + s, dtype=torch.bool).tril(p)
    out = F.scaled_dot_product_attention(q, kr, vr, attn_mask=mask)
    out = out.transpose(1, 2).reshape(b, s, heads * hd)
    return F.linear(out, attn_sd["o_proj.weight"]), k, v


class _AttnWithRope(Module):
    def __init__(self, dim, heads, kv_heads, inv_freq):
        super().__init__()
        self.attn = MultiHeadAttention(dim, heads, kv_heads)
        self.rope = RotaryEmbedding(dim // heads, 64, inv_freq)

    def forward(self, x, cache):
        return self.attn(x, rope=self.rope, cache=cache, causal=True)


def _attention_state_dict(dim, hd, heads, kv_heads):
    sd = {f"attn.{n}_proj.weight": torch.randn(o, dim) * 0.5 for n, o in
          [("q", heads * hd), ("k", kv_heads * hd), ("v", kv_heads * hd), ("o", dim)]}
    sd["attn.o_proj.weight"] = torch.randn(dim, heads * hd) * 0.5
    return sd


@pytest.mark.parametrize("runtime", ["native", "cpu"])
@pytest.mark.parametrize("heads,kv_heads", [(4, 4), (4, 2), (4, 1)])
def test_attention_kv_cache_prefill_then_decode(heads, kv_heads, runtime):
    torch.manual_seed(0)
    dim, hd, b = 16, 4, 2
    sd = _attention_state_dict(dim, hd, heads, kv_heads)
    inv_freq = default_inv_freq(hd, 10000.0)
    module = _AttnWithRope(dim, heads, kv_heads, inv_freq)
    cx = lm.Graph()
    x = cx.tensor((b, "s", dim), name="x")
    cache = KVCache(cx, b, kv_heads, hd, "p")
    y = module(x, cache).output()
    cx.set_dim("s", 1)
    cx.set_dim("p", 3)
    rt = cx.search(lm.NativeRuntime() if runtime == "native" else CpuRuntime())
    module.load_state_dict(rt, sd)
    attn_sd = {k[len("attn."):]: v for k, v in sd.items()}
    buffers = KVCacheBuffers([cache], limit=64)
    past = None
    for s in (5, 1, 1, 3, 12):  # a prefill, two decode steps, chunks (the last one grows
        xv = torch.randn(b, s, dim)  # the buffers): one program
        rt.set_data(x, xv)
        buffers.bind(rt)
        rt.execute({"s": s, "p": buffers.length})
        buffers.append(rt, s)
        want, k_ref, v_ref = _attention_ref(xv, attn_sd, heads, kv_heads, inv_freq, past)
        close(rt.get(y), want, 1e-4)
        close(rt.get(cache.k_new), k_ref[:, :, -s:].permute(2, 0, 1, 3), 1e-4)
        close(rt.get(cache.v_new), v_ref[:, :, -s:].permute(2, 0, 1, 3), 1e-4)
        past = (k_ref, v_ref)
    assert buffers.length == 22 and buffers.capacity >= 22
    close(buffers._k[0][:22], past[0].permute(2, 0, 1, 3), 1e-4)
    if runtime == "cpu":  # the cached rows are read in place: only x and the weights copied
        buffers.bind(rt)
        assert rt.memory()["borrowed_input_bytes"] >= 2 * 22 * b * kv_heads * hd * 4


def test_kv_cache_buffers_refuse_past_their_limit():
    cx = lm.Graph()
    cache = KVCache(cx, 1, 2, 4, "p")
    buffers = KVCacheBuffers([cache], limit=8)
    with pytest.raises(lm.ShapeError, match="exceed the context of 8"):
        buffers._reserve(9)
    buffers._reserve(8)
    assert buffers.capacity == 8


def test_attention_kv_cache_with_padding_bias_matches_torch():
    """A cache and a (batch, past + s) padding mask: the bias splits between the cached keys
    and the new ones."""
    torch.manual_seed(0)
    dim, hd, b, heads, kv_heads = 16, 4, 2, 4, 2
    from luminal.nn import masks

    sd = _attention_state_dict(dim, hd, heads, kv_heads)
    inv_freq = default_inv_freq(hd, 10000.0)
    module = _AttnWithRope(dim, heads, kv_heads, inv_freq)
    cx = lm.Graph()
    x = cx.tensor((b, "s", dim), name="x")
    keep = cx.tensor((b, lm.Expr("p") + lm.Expr("s")), lm.int32, name="keep")
    cache = KVCache(cx, b, kv_heads, hd, "p")
    y = module.attn(x, rope=module.rope, cache=cache, causal=True,
                    bias=masks.padding_bias(keep)).output()
    rt = cx.search(lm.NativeRuntime())
    module.load_state_dict(rt, sd)
    attn_sd = {k[len("attn."):]: v for k, v in sd.items()}
    buffers = KVCacheBuffers([cache])
    past = None
    keep_all = torch.ones(b, 9, dtype=torch.int32)
    keep_all[0, 1] = 0  # batch 0 never attends to position 1 (a pad)
    for s in (4, 1, 3, 1):
        xv = torch.randn(b, s, dim)
        p = buffers.length
        rt.set_data(x, xv)
        rt.set_data(keep, keep_all[:, :p + s])
        buffers.bind(rt)
        rt.execute({"s": s, "p": p})
        buffers.append(rt, s)
        q = F.linear(xv, attn_sd["q_proj.weight"]).view(b, s, heads, hd).transpose(1, 2)
        k = F.linear(xv, attn_sd["k_proj.weight"]).view(b, s, kv_heads, hd).transpose(1, 2)
        v = F.linear(xv, attn_sd["v_proj.weight"]).view(b, s, kv_heads, hd).transpose(1, 2)
        positions = torch.arange(p, p + s)
        q, k = _rope_ref(q, inv_freq, positions), _rope_ref(k, inv_freq, positions)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        past = (k, v)
        mask = torch.ones(s, p + s, dtype=torch.bool).tril(p) & keep_all[:, None, None, :p + s].bool()
        out = F.scaled_dot_product_attention(q, k.repeat_interleave(heads // kv_heads, 1),
                                             v.repeat_interleave(heads // kv_heads, 1),
                                             attn_mask=mask)
        want = F.linear(out.transpose(1, 2).reshape(b, s, heads * hd), attn_sd["o_proj.weight"])
        close(rt.get(y), want, 1e-4)


def test_attention_padding_bias_matches_torch():
    torch.manual_seed(0)
    dim, heads = 8, 2
    ref = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
    wq, wk, wv = ref.in_proj_weight.chunk(3)
    bq, bk, bv = ref.in_proj_bias.chunk(3)
    sd = {"q_proj.weight": wq, "k_proj.weight": wk, "v_proj.weight": wv,
          "q_proj.bias": bq, "k_proj.bias": bk, "v_proj.bias": bv,
          "o_proj.weight": ref.out_proj.weight, "o_proj.bias": ref.out_proj.bias}
    from luminal.nn import masks

    mha = MultiHeadAttention(dim, heads, bias=True)
    cx = lm.Graph()
    x = cx.tensor((2, 4, dim))
    mask = cx.tensor((2, 4), lm.int32)
    y = mha(x, bias=masks.padding_bias(mask)).output()
    rt = cx.search(lm.NativeRuntime())
    mha.load_state_dict(rt, sd)
    xv = torch.randn(2, 4, dim)
    keep = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    rt.set_data(x, xv)
    rt.set_data(mask, keep)
    rt.execute()
    want, _ = ref(xv, xv, xv, key_padding_mask=keep == 0, need_weights=False)
    close(rt.get(y), want, 1e-5)


def test_decoder_layer_names_and_state_dict_keys():
    layers = ModuleList([TransformerDecoderLayer(8, 2, 1, 16) for _ in range(2)])
    names = [n for n, _ in layers.named_parameters()]
    assert "1.self_attn.k_proj.weight" in names
    assert "0.mlp.gate_proj.weight" in names
    assert "1.post_attention_layernorm.weight" in names
    assert dict(layers.named_parameters())["0.self_attn.k_proj.weight"].shape == (4, 8)


def test_gqa_head_counts_are_checked():
    with pytest.raises(lm.ShapeError, match="not a multiple"):
        MultiHeadAttention(12, 3, 2)
