"""CUDA codegen without a GPU: every graph of the conformance tables (each variant) is
rendered as CUDA C and its kernels compiled by NVRTC to CUBIN for sm_90 and sm_80 (kernels
that differ only in names and integer constants compile once), and under each of the CUDA
renderer's tuning choices for sm_90; and the programs the search builds from the CUDA rules
(csrc/runtime/rules/cuda*.rules), one per schedule, for sm_90 and sm_80. A kernel NVRTC
rejects fails here. Needs the nvidia-cuda-nvrtc wheel (skipped without NVRTC)."""

import glob
import importlib
import os
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

import luminal as lm
from luminal import _core, cuda

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "conformance"))
import harness  # noqa: E402

pytestmark = pytest.mark.skipif(not cuda.find_nvrtc(), reason="NVRTC is not installed")

ARCHS = ["sm_90", "sm_80"]
# The renderer's other mappings, checked on sm_90 for the graphs whose code they change.
CHOICES = [{"cuda_reduce": 1}, {"cuda_reduce": 2, "cuda_vector": 1}, {"cuda_reduce": 3},
           {"cuda_matmul": 2}, {"cuda_matmul": 3}]


def _tables():
    names = []
    for path in sorted(glob.glob(os.path.join(HERE, "conformance", "test_*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if hasattr(importlib.import_module(name), "CASES"):
            names.append(name)
    return names


def build_graph(case, variant):
    """The graph harness.check builds for ``case`` in ``variant``, or None if skipped."""
    if variant not in case.variants:
        return None
    specs = harness._inputs(case)
    sym = harness._symbolic_dims(specs)
    if variant == "symbolic" and sym is None:
        return None
    cx = lm.Graph()
    tensors = []
    for spec, is_sym in zip(specs, sym[1] if sym else [False] * len(specs)):
        _, view, _ = harness._make_input(cx, spec, variant, is_sym)
        tensors.append(view)
    result = case.fn(cx, *tensors) if case.takes_graph else case.fn(*tensors)
    for r in result if isinstance(result, (tuple, list)) else (result,):
        r.output()
    return cx


def table_graphs(table):
    out = []
    for case in importlib.import_module(table).CASES:
        for variant in harness.VARIANTS:
            cx = build_graph(case, variant)
            if cx is not None:
                out.append((f"{case.id}/{variant}", cx))
    return out


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("cubin"))


KERNEL_NAMES = re.compile(r"\b(?:b|k|d)\d+\b|\b\d+\b")


def kernel_classes(graphs, arch, choice, seen=()):
    """The prelude and one kernel per class of kernels that differ only in buffer, kernel and
    dim names and integer constants (the same code for NVRTC), leaving out classes in `seen`.
    Returns (prelude, {class: (graph name, kernel text)})."""
    prelude, classes = "", {}
    for name, g in graphs:
        if isinstance(g, _core.Graph):  # a program's graph, from the search space
            src = _core.cuda_render(g, arch, _core.TuningChoice())
        else:
            src = cuda.render(g, arch, choice)
        head, *kernels = src.split("\n/* k")
        prelude = prelude or head
        for k in kernels:
            key = KERNEL_NAMES.sub("N", k)
            if key not in seen and key not in classes:
                classes[key] = (name, "/* k" + k)
    return prelude, classes


def compile_classes(prelude, classes, arch, label):
    """Compiles every kernel class with NVRTC in two translation units at once (NVRTC is
    single-threaded; CI has two cores), each kernel renamed c<unit>_<i>."""
    items = list(classes.values())
    units = [items[0::2], items[1::2]]

    def source(u):
        body = []
        for i, (_, text) in enumerate(units[u]):
            first = re.match(r"/\* (\w+):", text).group(1)  # "/* k3: writes b7 ..."
            body.append(re.sub(rf"\b{first}\b", f"c{u}_{i}", text))
        return prelude + "\n" + "\n".join(body)

    lib = cuda.find_nvrtc()
    errors = []
    with ThreadPoolExecutor(2) as pool:
        futures = {u: pool.submit(_core.cuda_nvrtc_compile, source(u), arch, lib)
                   for u in range(2) if units[u]}
        for u, f in futures.items():
            try:
                assert f.result() > 0
            except lm.CompileError as e:
                names = "\n".join(f"  c{u}_{i}: from {name}" for i, (name, _) in
                                   enumerate(units[u]) if f"c{u}_{i}" in str(e))
                errors.append(f"{str(e)[:4000]}\nkernels named in the log, from graphs:\n{names}")
    if errors:
        pytest.fail(f"NVRTC rejects kernels of {label}:\n" + "\n".join(errors))


@pytest.fixture(scope="module")
def all_graphs():
    graphs = [item for table in _tables() for item in table_graphs(table)]
    assert len(graphs) > 50
    return graphs


# Of the kernel classes sm_80 renders as sm_90 does (most), every SHARED_SAMPLE-th compiles for
# it too; those it renders otherwise all do. (Both in full took 4 minutes of the suite.)
SHARED_SAMPLE = 8


@pytest.mark.parametrize("arch", ARCHS)
def test_conformance_compiles(arch, all_graphs):
    """Every conformance graph's kernels, by class, compile to CUBIN for sm_90; for sm_80 the
    classes it renders differently and a sample of the others."""
    prelude, classes = kernel_classes(all_graphs, arch, {})
    if arch != ARCHS[0]:
        _, first = kernel_classes(all_graphs, ARCHS[0], {})
        shared = [k for k in classes if k in first]
        keep = set(shared[::SHARED_SAMPLE]) | {k for k in classes if k not in first}
        classes = {k: v for k, v in classes.items() if k in keep}
    compile_classes(prelude, classes, arch, f"the conformance tables ({arch})")


def test_conformance_compiles_under_each_choice(all_graphs):
    """The kernels the other mappings produce (classes the default does not) compile too."""
    _, seen = kernel_classes(all_graphs, "sm_90", {})
    seen = dict(seen)
    prelude, extra = "", {}
    for choice in CHOICES:
        prelude, classes = kernel_classes(all_graphs, "sm_90", choice, seen)
        extra.update(classes)
        seen.update(classes)
    assert extra, "the choices change no kernel"
    compile_classes(prelude, extra, "sm_90", "the conformance tables under the choices")


def rule_graphs():
    """Graphs the CUDA rules apply to: reductions (softmax in f32 and bf16, a column sum, a
    misaligned f16 row sum), matmuls (f32, bf16 with b transposed, a batched f16 one) and
    softmax weights times values (attention)."""
    out = []
    for dtype in (lm.float32, lm.bfloat16):
        cx = lm.Graph()
        x = cx.tensor((4, 96), dtype)
        e = (x - x.amax(-1, keepdim=True)).exp()
        (e / e.sum(-1, keepdim=True)).output()
        out.append((f"softmax/{dtype}", cx))
    cx = lm.Graph()
    cx.tensor((100, 37)).sum(0).output()
    cx.tensor((5, 203), lm.float16).sum(-1).output()
    out.append(("sums", cx))
    cx = lm.Graph()
    (cx.tensor((70, 50)) @ cx.tensor((50, 90))).output()
    (cx.tensor((33, 40), lm.bfloat16) @ cx.tensor((65, 40), lm.bfloat16).transpose(0, 1)).output()
    (cx.tensor((2, 24, 32), lm.float16) @ cx.tensor((2, 32, 16), lm.float16)).output()
    out.append(("matmuls", cx))
    cx = lm.Graph()  # attention's weights @ v (kernel/attention.h)
    (cx.tensor((4, 96)).softmax(-1) @ cx.tensor((96, 40))).output()
    out.append(("attention", cx))
    return out


SCHEDULE = re.compile(r"\(schedule (?:\(\w+ -?\d+\) ?)+\)")


@pytest.mark.parametrize("arch", ARCHS)
def test_every_rule_schedule_compiles(arch):
    """The search space over the CUDA rules offers a program per schedule; every schedule of
    the rules appears in one, and their kernels compile."""
    rules = cuda.rewrite_rules(arch)
    # A rule writes "(schedule ((cuda_reduce 1)) (...))"; program text "(schedule (cuda_reduce 1))".
    wanted = {"(schedule " + re.search(r"\(schedule \(((?:\(\w+ \d+\) ?)+)\)", r.text).group(1)
              + ")" for r in _core.parse_rules(rules, "cuda")}
    found, programs = set(), []
    for name, cx in rule_graphs():
        space = _core.SearchSpace(cx._g, rules, _core.RunnerLimits())
        for i, p in enumerate(space.extract(len(wanted) + 1, {})):
            found |= set(SCHEDULE.findall(p.text()))
            programs.append((f"{name}/program {i}", p.graph))
    assert found == wanted
    prelude, classes = kernel_classes(programs, arch, {})
    assert len(classes) > len(wanted)
    compile_classes(prelude, classes, arch, f"the programs of the CUDA rules ({arch})")


def test_source_is_deterministic(cache_dir):
    def make():
        cx = lm.Graph()
        a = cx.tensor(("s", 64), lm.bfloat16)
        b = cx.tensor((64, 32), lm.bfloat16)
        e = (a @ b).exp()
        (e / e.sum(-1, keepdim=True)).output()
        return cx
    assert cuda.codegen_check(make(), "sm_90", cache_dir=cache_dir) == \
        cuda.codegen_check(make(), "sm_90", cache_dir=cache_dir)


def test_kernel_mappings_render(cache_dir):
    """Each mapping appears in the source when its choice asks for it (and compiles)."""
    cx = lm.Graph()
    a = cx.tensor((128, 64), lm.bfloat16)
    b = cx.tensor((64, 96), lm.bfloat16)
    (a @ b).output()
    x = cx.tensor((8, 256), lm.float16)
    x.sum(-1).output()
    src = cuda.codegen_check(cx, "sm_90", {"cuda_matmul": 3}, cache_dir=cache_dir)
    assert "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" in src
    assert "lm_mma_bf16(lm_acc" in src
    assert "lm_warp_sum(" in src and "uint4 lm_raw" in src
    src = cuda.codegen_check(cx, "sm_80", {"cuda_matmul": 2}, cache_dir=cache_dir)
    assert "__shared__ float lm_as" in src and "lm_mma_bf16(lm_acc" not in src
    src = cuda.codegen_check(cx, "sm_80", {"cuda_reduce": 1, "cuda_matmul": 1},
                             cache_dir=cache_dir)
    assert "lm_warp_sum(v" not in src and "__shared__" not in src


def test_cubin_cache_is_used(tmp_path):
    cx = lm.Graph()
    (cx.tensor((4, 4)).exp() * 2).output()
    cuda.codegen_check(cx, "sm_90", cache_dir=str(tmp_path))
    files = glob.glob(str(tmp_path / "*.cubin"))
    assert len(files) == 1 and os.path.getsize(files[0]) > 0
    assert not glob.glob(str(tmp_path / "*.tmp.*"))
    cuda.codegen_check(cx, "sm_90", cache_dir=str(tmp_path))  # a hit: no new file
    cuda.codegen_check(cx, "sm_80", cache_dir=str(tmp_path))  # another arch: a new entry
    assert len(glob.glob(str(tmp_path / "*.cubin"))) == 2


def test_nvrtc_rejects_unknown_arch():
    cx = lm.Graph()
    cx.tensor((4,)).exp().output()
    with pytest.raises(lm.CompileError, match="sm_1"):
        cuda.codegen_check(cx, "sm_1")
    with pytest.raises(lm.CompileError, match="sm_XX"):
        cuda.codegen_check(cx, "gfx90a")


def test_identical_layers_share_kernels():
    """Layers that differ only in their buffers compile to one kernel each, launched per layer."""
    cx = lm.Graph()
    x = cx.tensor((1, 256), lm.bfloat16)
    h = x
    for _ in range(4):
        w = cx.tensor((256, 256), lm.bfloat16)
        h = (h @ w.transpose(0, 1)).exp() + h
    h.output()
    launches, _, _ = lm._core.cuda_launch_plan(cx._g, "sm_90", lm._core.TuningChoice(), {}, 132)
    names = [launch[0] for launch in launches]
    src = cuda.render(cx, "sm_90")
    assert len(names) == 8 and len(set(names)) < 8
    for name in set(names):
        assert src.count(f" {name}(") == 1
    shared = [tuple(launch[3]) for launch in launches if launch[0] == names[2]]
    assert len(shared) > 1 and len(set(shared)) == len(shared)  # one kernel, other buffers


def test_a_rejected_kernel_fails_the_check():
    cx = lm.Graph()
    cx.tensor((4,)).exp().output()
    prelude = cuda.render(cx, "sm_90").split("\n/* k")[0]
    bad = {"bad": ("exp/contig", '/* k0: writes b1 */\nextern "C" __global__ void k0(float* b1) '
                                 "{ b1[0] = not_declared; }")}
    with pytest.raises(pytest.fail.Exception, match="(?s)not_declared.*exp/contig"):
        compile_classes(prelude, bad, "sm_90", "a broken kernel")
