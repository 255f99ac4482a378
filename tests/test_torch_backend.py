"""torch.compile(model, backend="luminal") against eager PyTorch: plain torch models (an MLP, a
ResNet-style CNN, an MLP-Mixer-style block) and transformers' BERT, GPT-2 and Llama with tiny
random configs; outputs to 1e-4. With dynamic shapes one luminal program serves every
sequence length; a graph luminal cannot express runs in PyTorch with its reason reported,
never a wrong result; options and errors."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import luminal.fx  # noqa: E402
from luminal.fx import report  # noqa: E402

nn = torch.nn


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class MixerBlock(nn.Module):
    """Token mixing across patches (a transpose and an MLP), then channel mixing."""

    def __init__(self, patches, dim):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.tokens = nn.Sequential(nn.Linear(patches, 2 * patches), nn.GELU(),
                                    nn.Linear(2 * patches, patches))
        self.norm2 = nn.LayerNorm(dim)
        self.channels = nn.Sequential(nn.Linear(dim, 3 * dim), nn.GELU(), nn.Linear(3 * dim, dim))

    def forward(self, x):
        x = x + self.tokens(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channels(self.norm2(x))


def resnet():
    stem = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2))
    return nn.Sequential(stem, ResBlock(8), ResBlock(8), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(8, 5))


def randomized(model):
    """Random batch-norm statistics, so inference mode's normalization is not the identity."""
    torch.manual_seed(1)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def compiled(model, **kw):
    torch._dynamo.reset()
    report.reset()
    return torch.compile(model, backend="luminal", **kw)


def model_and_input(name):
    """MODELS[name]'s model (eval mode, random statistics) and an example input."""
    torch.manual_seed(0)
    make, example = MODELS[name]
    return randomized(make()), example()


MODELS = {
    "mlp": (lambda: nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.LayerNorm(32),
                                  nn.Linear(32, 7), nn.Softmax(-1)), lambda: torch.randn(5, 10)),
    "resnet": (resnet, lambda: torch.randn(2, 3, 16, 16)),
    "mixer": (lambda: MixerBlock(9, 12), lambda: torch.randn(3, 9, 12)),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_plain_torch_models_match_eager(name):
    model, x = model_and_input(name)
    with torch.no_grad():
        got = compiled(model)(x)
        want = model(x)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    assert report.compiled == 1 and not report.fallbacks, str(report)


def _tiny(kind):
    torch.manual_seed(0)
    if kind == "bert":
        return transformers.BertModel(transformers.BertConfig(
            vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
            intermediate_size=37)).eval()
    if kind == "gpt2":
        return transformers.GPT2LMHeadModel(transformers.GPT2Config(
            vocab_size=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=0,
            eos_token_id=0)).eval()
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2)).eval()


@pytest.mark.parametrize("kind", ["bert", "gpt2", "llama"])
def test_transformers_models_match_eager_at_every_length_with_one_program(kind):
    model = _tiny(kind)
    c = compiled(model, dynamic=True)
    key = "last_hidden_state" if kind == "bert" else "logits"
    with torch.no_grad():
        for length in (7, 11, 16):
            ids = torch.randint(0, 64, (2, length), generator=torch.Generator().manual_seed(length))
            np.testing.assert_allclose(c(ids)[key].numpy(), model(ids)[key].numpy(), rtol=1e-4,
                                       atol=1e-4)
    assert report.compiled == 1 and not report.fallbacks, str(report)


def test_options_choose_the_runtime_and_the_search():
    model = randomized(MODELS["mlp"][0]())
    x = torch.randn(4, 10)
    c = compiled(model, options={"runtime": "native", "search": 2, "cache": False})
    with torch.no_grad():
        np.testing.assert_allclose(c(x).numpy(), model(x).numpy(), rtol=1e-4, atol=1e-5)
    assert report.compiled == 1
    with pytest.raises(Exception, match="unknown option"):
        with torch.no_grad():
            compiled(model, options={"budget": 3})(x)


def test_an_operator_luminal_lacks_runs_in_pytorch_with_its_reason(capsys):
    """A matrix inverse has no luminal equivalent: the graph runs in PyTorch."""

    def f(x):
        return torch.linalg.inv(x + 3 * torch.eye(5)).sum(0) + x.sum()

    x = torch.randn(5, 5)
    with torch.no_grad():
        got = compiled(f)(x)
    assert torch.equal(got, f(x))
    assert report.compiled == 0 and len(report.fallbacks) == 1, str(report)
    assert "linalg" in report.fallbacks[0]
    assert "running a graph in PyTorch" in capsys.readouterr().err


def test_fft_and_complex_numbers_run_in_pytorch_and_say_why():
    """Luminal has no complex numbers: an FFT's graph runs in PyTorch, with that reason."""

    def f(x):
        return torch.fft.rfft(x).abs() + 1

    x = torch.randn(8)
    with torch.no_grad():
        got = compiled(f)(x)
    torch.testing.assert_close(got, f(x))
    assert report.compiled == 0 and report.fallbacks, str(report)
    assert any("complex" in r for r in report.fallbacks), str(report)


def test_an_in_place_write_into_a_fresh_tensor_is_a_value_and_others_are_refused():
    """copy_, add_, clamp_min_ write in place: into an input (a running statistic, say) or
    through a view luminal would lose the write, so it refuses; into a fresh tensor nothing
    reads after, it is the functional op's value."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from luminal.fx.aten import Unsupported
    from luminal.fx.backend import CompiledGraph

    def into_input(stats, x):
        stats.copy_(x.mean(0))
        return x * 2

    def into_fresh(x):
        return torch.zeros_like(x).copy_(x.flip(0)) + (x * 2).clamp_min_(0).add_(x)

    def through_a_view(x):
        y = x * 2
        y[0].add_(1)
        return y

    x, stats = torch.randn(4, 3), torch.zeros(3)
    gm = make_fx(into_input)(stats, x)
    with pytest.raises(Unsupported, match="copy_"):
        CompiledGraph(gm, (), {"runtime": "native", "cache": False})
    gm = make_fx(through_a_view)(x)
    with pytest.raises(Unsupported, match="add_"):
        CompiledGraph(gm, (), {"runtime": "native", "cache": False})
    gm = make_fx(into_fresh)(x)
    got = CompiledGraph(gm, (), {"runtime": "native", "cache": False})(x)[0]
    torch.testing.assert_close(got, into_fresh(x))


def test_as_strided_of_a_contiguous_tensor_matches_and_of_a_transposed_one_is_refused():
    """as_strided reads storage: a contiguous tensor's storage is its elements in order
    (luminal gathers them); a transposed input's is not, so that graph is refused."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from luminal.fx.aten import Unsupported
    from luminal.fx.backend import CompiledGraph

    def windows(x):
        return torch.as_strided(x, (3, 4), (2, 1), 1) * 2

    x = torch.randn(4, 3)
    gm = make_fx(windows, tracing_mode="fake")(x)
    got = CompiledGraph(gm, (), {"runtime": "native", "cache": False})(x)[0]
    torch.testing.assert_close(got, windows(x))
    transposed = torch.randn(3, 4).t()
    gm = make_fx(windows, tracing_mode="fake")(transposed)
    with pytest.raises(Unsupported, match="as_strided"):
        CompiledGraph(gm, (), {"runtime": "native", "cache": False})


class FirstOutput(nn.Module):
    """A transformers block's first output (its hidden states), for a loss."""

    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block(x)[0]


class MaskedEncoder(nn.Module):
    """torch's encoder layer with a float attention mask (-inf on some keys of each query)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 4, 24, dropout=0.0, batch_first=True)
        keep = torch.rand(6, 6, generator=torch.Generator().manual_seed(2)) < 0.6
        keep |= torch.eye(6, dtype=torch.bool)  # every query sees a key
        self.register_buffer("mask", torch.zeros(6, 6).masked_fill(~keep, float("-inf")))

    def forward(self, x):
        return self.layer(x, src_mask=self.mask)


def gpt2_block(n_embd=16, heads=4, positions=64):
    return transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=8, n_embd=n_embd, n_layer=1, n_head=heads, n_positions=positions,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0, eos_token_id=0,
        attn_implementation="sdpa")).h[0]


def test_safe_softmax_gives_zeros_on_a_fully_masked_row():
    """aten._safe_softmax (SDPA's math path, kept whole by the decompositions) over any dim:
    a row of -inf gives 0s where softmax gives NaN, other rows softmax's values."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from luminal.fx.backend import CompiledGraph

    x = torch.randn(3, 5, 4)
    x[1, :, 2] = float("-inf")  # column 2 of batch 1: fully masked along dim 1
    x[0, 3, :] = float("-inf")  # row 3 of batch 0: fully masked along dim 2
    for dim in (1, 2, -1):
        def safe(t):
            return torch.ops.aten._safe_softmax.default(t, dim)
        gm = make_fx(safe, tracing_mode="fake")(x)
        got = CompiledGraph(gm, (), {"runtime": "native", "cache": False})(x)[0]
        torch.testing.assert_close(got, safe(x))


# Convolutions with stride, padding, dilation and groups, overlapping pooling windows with
# padding: the backward's transposed convolution, weight gradient per group and max-pool
# gradient placed window offset by window offset; pooling windows that tile the input: each
# place's gradient from its one window. Attention (SDPA, causal and with a float
# mask): its backward from the forward's logsumexp (a decomposition of the forward that
# returned the weights there gave wrong gradients).
TRAINED = dict(MODELS, odd_cnn=(
    lambda: nn.Sequential(nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
                          nn.ReLU(), nn.MaxPool2d(3, stride=2, padding=1), nn.Flatten(),
                          nn.Linear(6 * 3 * 3, 3)),
    lambda: torch.randn(2, 4, 11, 11)),
    # windows that tile the input (stride = kernel, not square), a row and a column uncovered
    tiled_pool_cnn=(
        lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.MaxPool2d((2, 3)),
                              nn.Flatten(), nn.Linear(4 * 4 * 3, 3)),
        lambda: torch.randn(2, 3, 9, 10)),
    gpt2_block=(lambda: FirstOutput(gpt2_block()), lambda: torch.randn(2, 7, 16)),
    masked_encoder=(MaskedEncoder, lambda: torch.randn(2, 6, 16)))


def test_a_gpt2_block_through_the_backend_runs_attention_in_one_kernel(monkeypatch):
    """SDPA as AOT autograd leaves it (the CPU flash attention op, kept whole) reaches the
    fused attention kernel luminal.nn's attention runs: the program's attention is one
    kernel, and its memory grows with the sequence, not with its square (no S x S scores or
    mask); outputs match eager."""
    from luminal.fx import backend

    graphs = []
    init = backend.CompiledGraph.__init__

    def spy(self, *args):
        init(self, *args)
        graphs.append(self)

    monkeypatch.setattr(backend.CompiledGraph, "__init__", spy)
    torch.manual_seed(0)
    block = gpt2_block(n_embd=64, positions=1024).eval()
    arena = {}
    for length in (256, 512):
        c = compiled(block, dynamic=False)
        x = torch.randn(1, length, 64)
        with torch.no_grad():
            np.testing.assert_allclose(c(x)[0].numpy(), block(x)[0].numpy(), rtol=1e-4,
                                       atol=1e-4)
        assert report.compiled == 1 and not report.fallbacks, str(report)
        g = graphs[-1]
        assert "(schedule (attention 1))" in g.converted.graph.last_search_report.winner_program
        arena[length] = g.runtime.memory()["arena_bytes"]
    # Twice the tokens: about twice the memory (the 4 heads' S x S scores alone would add
    # 3 MiB: 4 x 512^2 x 4 bytes against 4 x 256^2 x 4).
    assert arena[512] < 2.2 * arena[256], arena


@pytest.mark.parametrize("name", sorted(TRAINED))
def test_training_through_the_backend_matches_eager(name):
    # Forward and backward graphs both compiled by luminal; three SGD steps with momentum,
    # batch norm in training mode (its running statistics are updated too).
    torch.manual_seed(0)
    make, example = TRAINED[name]
    eager = make().train()
    ours = make().train()
    ours.load_state_dict(eager.state_dict())
    xs = [example() for _ in range(3)]
    step = compiled(ours)
    opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, ours)]
    for x in xs:
        for model, fn, opt in ((eager, eager, opts[0]), (ours, step, opts[1])):
            opt.zero_grad()
            (fn(x) ** 2).mean().backward()
            opt.step()
    assert report.compiled >= 2 and not report.fallbacks, str(report)  # forward, backward
    for (k, want), got in zip(eager.state_dict().items(), ours.state_dict().values()):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)


def test_weights_changed_between_calls_are_read_again():
    model = nn.Linear(6, 4).eval()
    c = compiled(model)
    x = torch.randn(2, 6)
    with torch.no_grad():
        c(x)
        model.weight.mul_(2.0)
        np.testing.assert_allclose(c(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_from_torch_exports_a_graph_that_runs_on_native_and_cpu(name):
    import luminal as lm
    from conftest import CpuRuntime

    model, x = model_and_input(name)
    program = lm.from_torch(model, (x,))
    assert all(t.is_parameter for t in program._weight_tensors)
    with torch.no_grad():
        want = model(x).numpy()
    cx = program.graph
    for runtime in (lm.NativeRuntime, CpuRuntime):
        cx.build_search_space(runtime)
        rt = cx.search(runtime(), 1)
        program.load_weights(rt)
        rt.set_data(program.inputs[0], x)
        rt.execute()
        np.testing.assert_allclose(rt.get(program.outputs[0]), want, rtol=1e-4, atol=1e-5)


def test_from_torch_with_a_dynamic_dim_serves_every_batch():
    import luminal as lm

    model = randomized(MODELS["mlp"][0]())
    batch = torch.export.Dim("batch", min=1, max=64)
    program = lm.from_torch(model, (torch.randn(4, 10),), dynamic_shapes=({0: batch},))
    cx = program.graph
    cx.build_search_space(lm.NativeRuntime)
    rt = cx.search(lm.NativeRuntime(), 1)
    program.load_weights(rt)
    for n in (1, 5, 9):
        x = torch.randn(n, 10)
        rt.set_data(program.inputs[0], x)
        rt.execute(program.dims(x))
        with torch.no_grad():
            np.testing.assert_allclose(rt.get(program.outputs[0]), model(x).numpy(), rtol=1e-4,
                                       atol=1e-5)
