"""luminal.training.autograd against torch.autograd: finite differences for each primitive's rule, then
what the conformance table's gradients (tests/conformance, check_grad: every differentiable
row, every variant) do not express: ties, nn modules' parameter gradients, Embedding, views
asked for gradients, detach, a symbolic dim across executes, the backward graphs' CUDA."""

import numpy as np
import pytest

import luminal as lm
import luminal.nn.functional as LF
from luminal.nn import Conv2d, Embedding, LayerNorm, Linear, MultiHeadAttention, RMSNorm

from conftest import CpuRuntime

torch = pytest.importorskip("torch")
F = torch.nn.functional

RUNTIMES = {"native": lm.NativeRuntime, "cpu": CpuRuntime}


def _inputs(rng, shapes, domain):
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    if domain == "positive":
        arrays = [np.abs(a) + 0.5 for a in arrays]
    return arrays


def _graph_inputs(cx, shapes, permuted):
    """Graph inputs of ``shapes``; permuted: each an input of the reversed shape read through
    a permute (a non-contiguous view)."""
    if not permuted:
        inputs = [cx.tensor(s) for s in shapes]
        return inputs, inputs
    inputs = [cx.tensor(tuple(reversed(s))) for s in shapes]
    views = [t.permute(*reversed(range(len(s)))) for t, s in zip(inputs, shapes)]
    return inputs, views


def grad_case(build, reference, shapes, permuted=False, domain="normal", seed=0):
    """The graph of d sum(build(*xs) * r) / d xs for a random r, and torch's answer: (graph,
    feeds {input: array}, gradient outputs, torch's gradients as numpy)."""
    rng = np.random.default_rng(seed)
    arrays = _inputs(rng, shapes, domain)
    cx = lm.Graph()
    inputs, xs = _graph_inputs(cx, shapes, permuted)
    out = build(*xs)
    r = rng.standard_normal(tuple(int(d) for d in out.shape)).astype(np.float32)
    weight = cx.tensor(r.shape)
    grads = [g.output() for g in lm.grad((out * weight).sum(), xs)]
    feeds = {t: a.T.copy() if permuted else a for t, a in zip(inputs, arrays)}
    feeds[weight] = r
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    want = torch.autograd.grad((reference(*leaves) * torch.tensor(r)).sum(), leaves,
                               allow_unused=True)
    want = [np.zeros_like(a) if w is None else w.numpy() for a, w in zip(arrays, want)]
    return cx, feeds, grads, want


def check_grads(build, reference, shapes, runtime="native", permuted=False, domain="normal",
                rtol=1e-4, atol=1e-5, seed=0):
    cx, feeds, grads, want = grad_case(build, reference, shapes, permuted, domain, seed)
    rt = cx.search(RUNTIMES[runtime](), 1)
    for t, a in feeds.items():
        rt.set_data(t, a)
    rt.execute(cx.dyn_map)
    for i, (g, w) in enumerate(zip(grads, want)):
        np.testing.assert_allclose(rt.get(g), w, rtol=rtol, atol=atol, err_msg=f"input {i}")


# ---- finite differences for each primitive rule ------------------------------------------
PRIMITIVES = {
    "log2": (lambda x: x.log2(), [(3, 5)], "positive"),
    "exp2": (lambda x: x.exp2(), [(3, 5)], "normal"),
    "sin": (lambda x: x.sin(), [(3, 5)], "normal"),
    "sqrt": (lambda x: x.sqrt(), [(3, 5)], "positive"),
    "recip": (lambda x: x.reciprocal(), [(3, 5)], "positive"),
    "add": (lambda a, b: a + b, [(3, 5), (3, 5)], "normal"),
    "mul": (lambda a, b: a * b, [(3, 5), (3, 5)], "normal"),
    "mod": (lambda a, b: a.fmod(b), [(3, 5), (3, 5)], "positive"),
    "sum_reduce": (lambda x: x.sum(1), [(3, 5)], "normal"),
    "max_reduce": (lambda x: x.amax(0), [(3, 5)], "normal"),
    "gather": (lambda x: x.reshape(-1)[[4, 0, 4, 7]], [(3, 5)], "normal"),
    "cast": (lambda x: x.to(lm.float16).to(lm.float32) * 3.0, [(3, 5)], "normal"),
}


@pytest.mark.parametrize("name", sorted(PRIMITIVES))
def test_primitive_rule_matches_finite_differences(name):
    """Central differences of sum(f(x) * r), one element perturbed at a time, each evaluated
    by the interpreter, against the rule's gradient."""
    build, shapes, domain = PRIMITIVES[name]
    rng = np.random.default_rng(1)
    arrays = _inputs(rng, shapes, domain)
    cx = lm.Graph()
    xs = [cx.tensor(s) for s in shapes]
    out = build(*xs)
    r = rng.standard_normal(tuple(int(d) for d in out.shape)).astype(np.float32)
    weight = cx.tensor(r.shape)
    loss = (out * weight).sum().output()
    grads = [g.output() for g in lm.grad(loss, xs)]
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(weight, r)

    def evaluate(values):
        for t, a in zip(xs, values):
            rt.set_data(t, a)
        rt.execute()
        return float(rt.get(loss))

    evaluate(arrays)
    analytic = [rt.get(g).copy() for g in grads]
    eps = 5e-2 if name == "cast" else 1e-2
    tol = 5e-2 if name == "cast" else 2e-2
    for i, a in enumerate(arrays):
        numeric = np.zeros_like(a)
        for j in range(a.size):
            plus, minus = [x.copy() for x in arrays], [x.copy() for x in arrays]
            plus[i].reshape(-1)[j] += eps
            minus[i].reshape(-1)[j] -= eps
            numeric.reshape(-1)[j] = (evaluate(plus) - evaluate(minus)) / (2 * eps)
        np.testing.assert_allclose(analytic[i], numeric, rtol=tol, atol=tol, err_msg=name)


# ---- what the conformance table's gradients (tests/conformance, check_grad) do not express --
def _softmax_attention(q, k, v):
    return LF.scaled_dot_product_attention(q, k, v, is_causal=True)


# Ties (torch.amax splits the gradient evenly between them; the table's data has none) and
# kl_div's log_target (no table row).
OPS = {
    "amax_ties": (lambda a: a.clamp(max=0.3).amax(1), lambda a: a.clamp(max=0.3).amax(1),
                  [(4, 6)], "normal"),
    "kl_div_log_target": (lambda a, b: LF.kl_div(a, LF.log_softmax(b, 1), reduction="sum",
                                                 log_target=True),
                          lambda a, b: F.kl_div(a, F.log_softmax(b, 1), reduction="sum",
                                                log_target=True),
                          [(3, 4), (3, 4)], "normal"),
}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("name", sorted(OPS))
def test_gradient_matches_torch(name, runtime):
    build, reference, shapes, domain = OPS[name]
    check_grads(build, reference, shapes, runtime, domain=domain)


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradient_of_noncontiguous_inputs(name):
    build, reference, shapes, domain = OPS[name]
    check_grads(build, reference, shapes, "native", permuted=True, domain=domain)


def test_gradient_of_a_contiguous_prefix_view():
    """A gradient asked of x[:2], a contiguous view of fewer elements than its node."""
    xv = np.random.default_rng(8).standard_normal((4, 3)).astype(np.float32)
    cx = lm.Graph()
    x = cx.tensor((4, 3))
    head = x[:2]
    (g,) = lm.grad((head * head).sum(), [head])
    g.output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(x, xv)
    rt.execute()
    leaf = torch.tensor(xv[:2], requires_grad=True)
    (leaf * leaf).sum().backward()
    np.testing.assert_allclose(rt.get(g), leaf.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_detach_stops_the_gradient():
    """x * x.detach(): the gradient is x (one factor), as torch's; round's is zero even where
    the incoming gradient is infinite (x / round(x) at round(x) = 0)."""
    xv = np.array([[0.3, -1.7, 2.2], [0.1, 4.5, -0.6]], np.float32)
    cx = lm.Graph()
    x = cx.tensor((2, 3))
    (g,) = lm.grad((x * x.detach()).sum() + (x / x.round()).sum(), [x])
    g.output()
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(x, xv)
    rt.execute()
    leaf = torch.tensor(xv, requires_grad=True)
    ((leaf * leaf.detach()).sum() + (leaf / leaf.round()).sum()).backward()
    np.testing.assert_allclose(rt.get(g), leaf.grad.numpy(), rtol=1e-6)


# The ops whose backward graphs' CUDA kernels the emulator runs (the last test).
EMULATED = {
    "matmul": (lambda a, b: a @ b, lambda a, b: a @ b, [(3, 5), (5, 4)], "normal"),
    "softmax": (lambda a: a.softmax(-1), lambda a: a.softmax(-1), [(3, 5)], "normal"),
    "layer_norm": (lambda x, w, b: LF.layer_norm(x, (6,), w, b),
                   lambda x, w, b: F.layer_norm(x, (6,), w, b), [(4, 6), (6,), (6,)],
                   "normal"),
    "conv2d": (lambda x, w: LF.conv2d(x, w, padding=1, stride=2),
               lambda x, w: F.conv2d(x, w, padding=1, stride=2),
               [(2, 2, 5, 5), (3, 2, 3, 3)], "normal"),
    "attention": (_softmax_attention,
                  lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                  [(1, 2, 4, 8), (1, 2, 4, 8), (1, 2, 4, 8)], "normal"),
    "amax_ties": OPS["amax_ties"],
    "pad": (lambda a: LF.pad(a, (1, 2, 0, 1)), lambda a: F.pad(a, (1, 2, 0, 1)), [(3, 4)],
            "normal"),
    "index_select": (lambda a: a[[2, 0, 2]], lambda a: a[[2, 0, 2]], [(4, 5)], "normal"),
}


# ---- nn modules: backward() records .grad on their parameters -----------------------------
def _mha_reference(x, p, heads):
    b, s, d = x.shape
    q, k, v = (F.linear(x, p[f"{n}_proj.weight"]).reshape(b, s, heads, -1).transpose(1, 2)
               for n in "qkv")
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return F.linear(o.transpose(1, 2).reshape(b, s, d), p["o_proj.weight"])


MODULES = {
    "linear": (lambda: Linear(6, 4), (3, 6), lambda x, p: F.linear(x, p["weight"], p["bias"])),
    "layer_norm": (lambda: LayerNorm(6), (3, 6),
                   lambda x, p: F.layer_norm(x, (6,), p["weight"], p["bias"])),
    "rms_norm": (lambda: RMSNorm(6, 1e-6), (3, 6),
                 lambda x, p: F.rms_norm(x, (6,), p["weight"], 1e-6)),
    "conv2d": (lambda: Conv2d(2, 3, 3, padding=1), (2, 2, 5, 5),
               lambda x, p: F.conv2d(x, p["weight"], p["bias"], padding=1)),
    "attention": (lambda: MultiHeadAttention(8, 2), (2, 4, 8),
                  lambda x, p: _mha_reference(x, p, 2)),
}


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
@pytest.mark.parametrize("name", sorted(MODULES))
def test_module_parameter_grads_match_torch(name, runtime):
    make, shape, reference = MODULES[name]
    module = make()
    rng = np.random.default_rng(3)
    params = {n: rng.standard_normal(p.shape).astype(np.float32) * 0.5
              for n, p in module.named_parameters()}
    xv = rng.standard_normal(shape).astype(np.float32)
    cx = lm.Graph()
    x = cx.tensor(shape).requires_grad_()
    out = module(x, causal=True) if name == "attention" else module(x)
    r = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    weight = cx.tensor(r.shape)
    (out * weight).sum().backward()
    tensors = {n: p.bound_in(cx) for n, p in module.named_parameters()}
    for t in list(tensors.values()) + [x]:
        t.grad.output()
    rt = cx.search(RUNTIMES[runtime](), 1)
    module.load_state_dict(rt, params)
    rt.set_data(x, xv)
    rt.set_data(weight, r)
    rt.execute()
    leaves = {n: torch.tensor(a, requires_grad=True) for n, a in params.items()}
    xt = torch.tensor(xv, requires_grad=True)
    (reference(xt, leaves) * torch.tensor(r)).sum().backward()
    for n, t in tensors.items():
        np.testing.assert_allclose(rt.get(t.grad), leaves[n].grad.numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=n)
    np.testing.assert_allclose(rt.get(x.grad), xt.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_embedding_grad_is_a_one_hot_contraction(runtime):
    """Embedding's gradient accumulates repeated ids, as torch's dense embedding backward."""
    module = Embedding(7, 3)
    weight = np.random.default_rng(4).standard_normal((7, 3)).astype(np.float32)
    ids = np.array([[1, 5, 1], [6, 0, 1]], dtype=np.int32)
    cx = lm.Graph()
    t = cx.tensor((2, 3), lm.int32)
    out = module(t)
    (out * out).sum().backward()
    w = module.weight.bound_in(cx)
    w.grad.output()
    rt = cx.search(RUNTIMES[runtime](), 1)
    module.load_state_dict(rt, {"weight": weight})
    rt.set_data(t, ids)
    rt.execute()
    leaf = torch.tensor(weight, requires_grad=True)
    (F.embedding(torch.tensor(ids, dtype=torch.long), leaf) ** 2).sum().backward()
    np.testing.assert_allclose(rt.get(w.grad), leaf.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradient_with_a_symbolic_dim():
    """A (s, 4) input through a linear map and softmax, compiled once, run for two s."""
    cx = lm.Graph()
    x = cx.tensor(("s", 4))
    w = cx.tensor((4, 3), parameter=True)
    loss = (x @ w).softmax(-1).amax(-1).sum() + (x @ w).sum() * 0.1
    loss.backward()
    w.grad.output()
    rt = cx.search(lm.CpuRuntime(cache_dir=""), 1)
    rng = np.random.default_rng(5)
    wv = rng.standard_normal((4, 3)).astype(np.float32)
    rt.set_data(w, wv)
    for s in (3, 6):
        xv = rng.standard_normal((s, 4)).astype(np.float32)
        cx.set_dim("s", s)
        rt.set_data(x, xv)
        rt.execute(cx.dyn_map)
        leaf = torch.tensor(wv, requires_grad=True)
        z = torch.tensor(xv) @ leaf
        (z.softmax(-1).amax(-1).sum() + z.sum() * 0.1).backward()
        np.testing.assert_allclose(rt.get(w.grad), leaf.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_grad_of_an_unused_input_is_zero():
    cx = lm.Graph()
    a, b = cx.tensor((2, 3)), cx.tensor((2, 3))
    ga, gb = (g.output() for g in lm.grad(a.sum(), [a, b]))
    rt = cx.search(lm.NativeRuntime(), 1)
    rt.set_data(a, np.ones((2, 3), np.float32))
    rt.set_data(b, np.ones((2, 3), np.float32))
    rt.execute()
    np.testing.assert_array_equal(rt.get(ga), np.ones((2, 3)))
    np.testing.assert_array_equal(rt.get(gb), np.zeros((2, 3)))


def test_grad_needs_a_scalar_loss_or_a_seed():
    cx = lm.Graph()
    a = cx.tensor((2, 3))
    with pytest.raises(lm.ShapeError, match="not a scalar"):
        lm.grad(a * 2.0, [a])


@pytest.mark.parametrize("runtime", sorted(RUNTIMES))
def test_gather_along_a_dim_grad_matches_torch(runtime):
    """torch.gather's gradient (an index smaller than the input in the other dims too)."""
    index = np.array([[0, 3, 3], [1, 1, 0]], dtype=np.int32)
    x_value = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    cx = lm.Graph()
    x = cx.tensor((3, 4))
    i = cx.tensor((2, 3), lm.int32)
    (g,) = lm.grad((x.gather(1, i) * x.gather(1, i)).sum(), [x])
    g.output()
    rt = cx.search(RUNTIMES[runtime](), 1)
    rt.set_data(x, x_value)
    rt.set_data(i, index)
    rt.execute()
    leaf = torch.tensor(x_value, requires_grad=True)
    (torch.gather(leaf, 1, torch.tensor(index, dtype=torch.long)) ** 2).sum().backward()
    np.testing.assert_allclose(rt.get(g), leaf.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_gradient_cuda_kernels_emulated(tmp_path):
    """The backward graphs' generated CUDA, run by the CPU emulator (tests/cuda_emu.py), match
    torch.autograd: the CUDA renderer handles what the gradient rules emit."""
    cuda_emu = pytest.importorskip("cuda_emu")
    if cuda_emu.compiler() is None:
        pytest.skip("no C++ compiler")
    cases = []
    for name in EMULATED:
        build, reference, shapes, domain = EMULATED[name]
        cases.append(grad_case(build, reference, shapes, domain=domain))
    emu = cuda_emu.Emulated([(cx, None, {}) for cx, _, _, _ in cases], str(tmp_path))
    for i, (name, (cx, feeds, grads, want)) in enumerate(zip(EMULATED, cases)):
        for got, w in zip(emu.run(i, feeds, grads), want):
            np.testing.assert_allclose(got, w, rtol=1e-4, atol=1e-4, err_msg=name)


def test_weight_gradient_over_batch_and_sequence_is_one_matmul():
    """A Linear over (batch, seq, in): its weight's gradient sums batch and sequence as one
    GEMM of K = batch x seq (kernel/view_index.h reads the merged axis of the fused product)."""
    rng = np.random.default_rng(7)
    xv = rng.standard_normal((4, 8, 6)).astype(np.float32)
    wv = rng.standard_normal((5, 6)).astype(np.float32)
    r = rng.standard_normal((4, 8, 5)).astype(np.float32)
    cx = lm.Graph()
    x, w, weight = cx.tensor((4, 8, 6)), cx.tensor((5, 6)), cx.tensor((4, 8, 5))
    (gw,) = lm.grad((LF.linear(x, w) * weight).sum(), [w])
    gw.output()
    rt = cx.search(CpuRuntime(), 1)
    for t, a in ((x, xv), (w, wv), (weight, r)):
        rt.set_data(t, a)
    rt.execute()
    leaf = torch.tensor(wv, requires_grad=True)
    (F.linear(torch.tensor(xv), leaf) * torch.tensor(r)).sum().backward()
    np.testing.assert_allclose(rt.get(gw), leaf.grad.numpy(), rtol=1e-5, atol=1e-5)
    kernels = rt._rt.program_text().split("(kernel ")[1:]
    assert any("(reduce r0 32)" in k and "(matmul" in k for k in kernels)
