"""What a search candidate is checked on, and when it disagrees: the input sets (ordinary
values, large magnitudes, values at the edge of exp2's range, large and negative ints, zeros)
and the per-element tolerance, each set deterministic for a seed; and the search's phases that
use them: the reference's outputs on each set (run_reference), a candidate run on the
ordinary set before it is timed (check_candidate, stopped once it has lost the race) and on
the others once the pick reaches it (check_rest), a cache hit re-run on the ordinary set
(recheck). Not the compiling of candidates (driver.py).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np

from .. import _core
from .. import dtype as dt
from ..errors import LuminalError, ShapeError
from ..runtime import NativeRuntime, _from_storage, _to_storage
from .extract import _Texts
from .report import _Phase

if TYPE_CHECKING:
    from .driver import SearchRun
    from .report import CandidateResult

# reference="auto" checks against NativeRuntime up to this many elements touched per run (a few
# seconds of the interpreter); bigger graphs kernel by kernel where the runtime can
# (can_check_kernels; runtime/kernel_check.h: each kernel's output at sampled elements, from
# the very operands it read, on the graph as written's formula for its class), which catches
# a fault in code every program shares (a renderer's, the compiler's) and a wrong rewrite;
# elsewhere against the runtime itself running the graph as written (a wrong rewrite only).
AUTO_NATIVE_WORK = 2e7
# The kernel-by-kernel check: elements sampled per kernel whose code is not checked yet, per
# kernel running code checked before, and the interpreter's steps per kernel past which it
# samples no more.
KERNEL_SAMPLES = 48
KERNEL_REPEAT_SAMPLES = 1
# The extra sets kernel by kernel look for errors of the whole size (an overflow, a NaN, a
# value range a kernel mishandles): fewer samples, and no class check (a rewrite's soundness
# is the ordinary sets').
EXTRA_KERNEL_SAMPLES = 8
EXTRA_KERNEL_REPEAT_SAMPLES = 0
KERNEL_STEP_BUDGET = 1 << 19
# A cache hit's re-check kernel by kernel (recheck): a program that passed every set when it
# was stored, re-run to catch an entry damaged or no longer what this build makes of it:
# every kernel run alone, its output wholly written and its operands unchanged, and each
# distinct code sampled RECHECK_SAMPLES times; a kernel repeating code (a model's other
# layers) is not sampled (0.33 of a 1B model's 0.55 s re-check were the interpreter's at
# KERNEL_SAMPLES, and a Q4_0 model's one sample per repeat took 1 s: a GEMV row of the Q8_0
# round trip each).
RECHECK_SAMPLES = 8
RECHECK_REPEAT_SAMPLES = 0
# The program the search picks is checked at a second binding of the symbols too
# (second_dims): each at 1 where the search binds it above 1, else at SECOND_ROWS, above every
# row count a kernel branches on at run time (a GEMV for M <= gemv_rows, at most 16), so both
# sides are taken; 21 rows also fill one whole row tile of every tile_m the rules offer (4 to
# 16) and leave a remainder for each. (40 left none for 4 and 8, and its GEMMs took 1.2 s of
# a 1B model's 1.8 s check there.) Checked kernel by kernel, the second binding runs each
# code once (CheckSet.run_repeats): the repeats' wiring and memory are the ordinary set's.
SECOND_ROWS = 21
# The extra check sets (extra_sets) run against the interpreter for graphs up to this much work
# (a tenth of a second a run), at the search's dims or, above it, with every symbolic dim bound
# to SHRUNK_DIM; bigger graphs are checked on the ordinary set only. A cache hit is re-verified
# on the ordinary set up to this work too.
EXTRA_SETS_WORK = 4e6
SHRUNK_DIM = 2

# Per output dtype, (floor, rtol): an element passes when |got - want| <= floor * scale +
# rtol * |want|, where scale = max(1, the median |want| of that output): an absolute floor at
# the output's typical size (reassociated float sums err there) plus a tolerance relative to
# the element itself, so next to a 1000 an element of 0.01 returned as 0.1 still fails.
CHECK_TOLERANCE = {
    dt.float32: (1e-3, 2e-3),
    dt.float16: (2e-2, 1e-2),
    dt.bfloat16: (6e-2, 5e-2),
}
# A graph that rounds values it computes to quantized activations
# (_core.rounds_computed_activations) moves by a quantization step wherever a sum upstream is
# reassociated, and the steps compound through its layers: its outputs are compared in norm,
# |got - want| <= tolerance * |want| per output (a wrong program errs by its whole size). On
# check inputs at +-[0.5, 2), a 16-layer 1B-wide Q4_K model's int8 program differed from the
# graph as written by up to 7.5e-3 in norm at 64 positions of context, 2.2e-2 at 168 and at
# 4096, and the tolerance leaves twice that; such graphs now draw their parameter matrices at
# init_scale, where a 1B-wide Q5_K model's program differed by 7e-3.
NORMWISE_TOLERANCE = {dt.float32: 5e-2, dt.float16: 6e-2, dt.bfloat16: 1e-1}
LARGE_SCALE = 64.0  # the large set: the ordinary floats times this, so +-[32, 128)
LARGE_INTS = 30000  # the large-ints set: ints in [-LARGE_INTS, LARGE_INTS], products fit in i32
# The exp2-edge set: +-(edge - [0.5, 2)), where 2**edge is the first power of two past the
# dtype's largest finite value: exp2 of the largest of them is still finite.
EXP2_EDGE = {dt.float32: 128.0, dt.float16: 16.0, dt.bfloat16: 128.0}

# Float inputs of more elements take a window of one pool per dtype and scale
# (_pooled_sizes); smaller ones are drawn each on its own.
POOLED_FROM = 1 << 16
# Random floats as bit patterns, per storage dtype: (word type, kept bits, set bits). The kept
# bits are the sign, the exponent's lowest bit and the mantissa, the set bits the rest of an
# exponent of 2^-1: values +-[0.5, 2) with random mantissas, each one a word of random bits.
_RANDOM_FLOAT_BITS = {
    dt.float32: (np.uint32, 0x80FFFFFF, 0x3F000000),
    dt.float16: (np.uint16, 0x87FF, 0x3800),
    dt.bfloat16: (np.uint16, 0x80FF, 0x3F00),
}


@dataclass
class CheckSet:
    """One set of check inputs: a storage array per graph input (by position), the dims they
    are shaped for, and the reference's outputs on them (filled by the search), or
    ``by_kernel``: each kernel checked against the interpreter as it runs. ``strict``:
    NaNs must match exactly; otherwise an element where the reference is NaN is not compared
    (the graph itself gives no value there, and equivalent programs may differ in how)."""
    name: str
    inputs: list
    dims: dict
    strict: bool = False
    want: list | None = None
    by_kernel: bool = False  # checked kernel by kernel (want unused), not output by output
    # by_kernel: the inputs drawn again with ints below a bound (INT_HIGHS), or None
    redraw: Callable | None = None
    # Compared in norm (NORMWISE_TOLERANCE): the extra sets kernel by kernel, which look for
    # value-range bugs (an overflow, a NaN: errors of the whole size) in every intermediate,
    # where a fused chain's f32 rounding near the edge of a range (a GELU's 1 + erf(x) at
    # x = -100) differs from the interpreter's per node by more than CHECK_TOLERANCE.
    normwise: bool = False
    # (samples per kernel of new code, per repeat) where not the ordinary sets' (KERNEL_*)
    # or the extra sets' (EXTRA_KERNEL_*): a cache hit's re-check (RECHECK_SAMPLES).
    samples: tuple | None = None
    # by_kernel: False where a kernel repeating code run before in the program is not run
    # (its output stand-in values, runtime/kernel_check.h): the second binding's, there for
    # each code's run-time branches (SECOND_ROWS), and the extra sets', there for value-range
    # bugs of each code. The ordinary set runs every kernel: a repeat's wiring (its operands,
    # its memory) is checked there.
    run_repeats: bool = True


def random_floats(rng, count: int, dtype, scale: float = 1.0) -> np.ndarray:
    """``count`` random values of float ``dtype`` in +-[0.5, 2), in its storage layout, made
    from random words in place (uniform draws in f32 rounded to bf16 took 22 s for a 1B model's
    weights, and twice the memory). Past RANDOM_POOL_BYTES the first repeat (_repeated): the
    1B model's weights take no drawing of their own, and no first touch of their memory.
    ``scale`` multiplies them (a weight at an initialized network's scale, init_scale)."""
    word, keep, set_bits = _RANDOM_FLOAT_BITS[dtype]
    words_per_draw = 8 // np.dtype(word).itemsize
    drawn = min(count, RANDOM_POOL_BYTES // np.dtype(word).itemsize)
    bits = np.empty(drawn, word)  # the one array made (a chunk of draws at a time beside it)
    step = _DRAW_CHUNK * words_per_draw
    for start in range(0, drawn, step):
        n = min(step, drawn - start)
        draws = -(-n // words_per_draw)
        bits[start:start + n] = rng.integers(0, 1 << 64, size=draws,
                                             dtype=np.uint64).view(word)[:n]
    bits &= word(keep)
    bits |= word(set_bits)
    if scale != 1.0:
        scaled = _from_storage(bits.view(dt.storage(dtype)), dtype).astype(np.float32) * scale
        bits[:] = np.asarray(_to_storage(scaled, dtype)).view(word)
    return _repeated(bits, count * bits.itemsize).view(dt.storage(dtype))


# Random float values are drawn for this many bytes at most, then repeated: a prime number of
# _PAGE pages (so the repeats can be the same pages mapped again, _repeated), about 4.2 M
# 16-bit values. A row of a power-of-two length then repeats only every 2053 rows or more.
# Where the system's pages are bigger, the repeats are copied (the same values).
_PAGE = 4096
RANDOM_POOL_BYTES = 2053 * _PAGE
# Random words drawn at a time (random_floats): the same stream as one draw of them all.
_DRAW_CHUNK = 1 << 20


def _repeated(pattern: np.ndarray, nbytes: int) -> np.ndarray:
    """A uint8 array of ``nbytes`` repeating ``pattern``'s bytes (all of them, when it holds
    more). Past a pattern of whole pages, its pages mapped again (_core.repeated_pages): on the
    2-core VMs, the first touch of fresh memory took about 1 s per 525 MB, most of a 1B
    model's check inputs; elsewhere copied, doubling what is copied each time."""
    flat = pattern.reshape(-1).view(np.uint8)
    if nbytes <= flat.size:
        return flat[:nbytes]
    mapped = _core.repeated_pages(flat, nbytes)
    if mapped is not None:
        return mapped
    out = np.empty(nbytes, np.uint8)
    out[:flat.size] = flat
    filled = flat.size
    while filled < nbytes:
        n = min(filled, nbytes - filled)
        out[filled:filled + n] = out[:n]
        filled += n
    return out


def random_blocks(rng, count: int, dtype, scale: float = 1.0) -> np.ndarray:
    """``count`` values of quantized ``dtype`` as raw blocks: 64 blocks quantized from
    random_floats times ``scale`` (so their scales are ordinary), repeated (whole pages of
    them, _repeated)."""
    from ..weights.quantize import quantize

    values = _core.block_values(dtype)
    drawn = random_floats(rng, 64 * values, dt.float32, scale).reshape(64, values)
    pattern = np.asarray(quantize(drawn, dtype)).reshape(-1).view(np.uint8)
    pages = math.lcm(pattern.size, _PAGE) // pattern.size  # patterns in whole pages
    return _repeated(np.tile(pattern, pages), _core.storage_bytes(dtype, count))


def _input_shapes(g, dims: dict) -> list:
    """(dtype, element count) of each input of g, by position: counts in Python ints, each
    input's size checked as the runtimes check it (core/sizes.h): too big is a ShapeError
    naming the input, before any memory is drawn for it."""
    out = []
    for node in g.inputs():
        dims_of = g.node_shape(node)
        shape = [d.eval(dims) if not d.is_const() else d.as_const() for d in dims_of]
        dtype = g.node_dtype(node)
        count = math.prod(shape)
        if count * np.dtype(dt.storage(dtype)).itemsize > _core.max_buffer_bytes:
            raise ShapeError(f"search: input '{g.node_name(node)}' of shape {tuple(shape)} "
                             f"needs more than {_core.max_buffer_bytes >> 40} TiB, the most a "
                             f"buffer may hold")
        out.append((dtype, count, g.node_name(node), shape))
    return out


def init_scale(g, node, shape) -> float:
    """The scale of a parameter matrix's check values in a graph that rounds computed values
    to quantized activations: 1 / sqrt(its last dim), as a network is initialized. At +-[0.5,
    2) a deep stack of random layers is chaotic (each SwiGLU squares its input's scale, each
    attention's softmax is an argmax), so one rounding step taken the other way, as any
    reassociated program takes a few, grew 2-3x a layer: 16 layers of a 1B-wide Q5_K model's
    int8 program, whose every matmul is within 3e-7 of the reference, differed 13% in norm in
    their logits. Other inputs and other graphs: 1."""
    if len(shape) < 2 or not g.node_parameter(node):
        return 1.0
    return 1.0 / math.sqrt(max(shape[-1], 1))


# The ranges [0, high) the ordinary set's ints are drawn from, widest first: where a graph's
# reference run finds an index out of range (a Gather of token ids into a table of 2 token
# types), the search draws them again from the next.
INT_HIGHS = (4, 2, 1)


def random_inputs(g, dims: dict, seed: int, init_scaled: bool = False,
                  int_high: int = INT_HIGHS[0]) -> list:
    """The ordinary set's inputs, deterministic for the seed: floats in +-[0.5, 2)
    (random_floats), quantized blocks of such values (random_blocks), ints in [0,
    ``int_high``), bools 0 or 1; with ``init_scaled`` parameter matrices at init_scale. Each
    drawn in its storage dtype, once (no wider copies: a model's weights are most of it); one
    this machine cannot hold is a ShapeError naming the input, not a MemoryError."""
    rng = np.random.default_rng(seed)
    shapes = _input_shapes(g, dims)
    scales = [init_scale(g, node, shape) if init_scaled else 1.0
              for node, (_, _, _, shape) in zip(g.inputs(), shapes)]
    pooled = _pooled_sizes(shapes, scales)
    pools = {}  # (float dtype, scale) -> [its pool, the inputs that took a window of it]
    out = []
    for (dtype, count, name, shape), scale in zip(shapes, scales):
        try:
            key = (dtype, scale)
            if key in pooled and count > POOLED_FROM:
                if key not in pools:
                    pools[key] = [random_floats(rng, pooled[key] + POOL_STARTS, dtype, scale), 0]
                pool, taken = pools[key]
                start = taken * POOL_STEP % POOL_STARTS
                pools[key][1] += 1
                out.append((dtype, pool[start:start + count]))
                continue
            if dt.is_float(dtype):
                out.append((dtype, random_floats(rng, count, dtype, scale)))
                continue
            if dt.is_quantized(dtype):
                out.append((dtype, random_blocks(rng, count, dtype, scale)))
                continue
            high = min(2, int_high) if dtype == dt.bool_ else int_high
            values = rng.integers(0, high, size=count, dtype=np.int32)
            out.append((dtype, _to_storage(values, dtype)))
        except MemoryError:
            raise ShapeError(f"search: input '{name}' of shape {tuple(shape)}: its check "
                             f"inputs ({count} elements) do not fit in this machine's "
                             f"memory") from None
    return out


# Where the inputs bigger than POOLED_FROM of one float dtype start in their shared pool: the
# k-th at k * POOL_STEP (mod POOL_STARTS: odd, so the first POOL_STARTS all differ), so no
# two read the same values in step; the pool is POOL_STARTS longer than its biggest input.
POOL_STEP = 104729
POOL_STARTS = 1 << 16


def _pooled_sizes(shapes: list, scales: list) -> dict:
    """{(float dtype, scale): the biggest count}: of the inputs bigger than POOLED_FROM, which
    share one pool of random_floats per dtype and scale (init_scale's: one per fan-in), of
    that count plus POOL_STARTS, each reading a window of it (random_inputs). Past
    RANDOM_POOL values repeat anyway, so a window is what that input's own draw would be,
    shifted; a 1B model's weights then take an array of its biggest weight's size per scale
    instead of a copy of every weight (2.5 GB, seconds of a cold compile), and no draw of its
    own each (scaled ones converted to f32 and back: 1.5 s for a 1B model's projections).
    """
    biggest = {}
    for (dtype, count, _, _), scale in zip(shapes, scales):
        if dt.is_float(dtype) and count > POOLED_FROM:
            biggest[dtype, scale] = max(biggest.get((dtype, scale), 0), count)
    return biggest


def _map_floats(inputs: list, varied: list, fn) -> list:
    """``inputs`` with every float array of a ``varied`` input replaced by fn(its values in
    f32, its dtype)."""
    out = []
    for (dtype, data), vary in zip(inputs, varied):
        if vary and dt.is_float(dtype):
            values = _from_storage(data, dtype).astype(np.float32)
            data = _to_storage(fn(values, dtype).astype(np.float32), dtype)
        out.append((dtype, data))
    return out


def _exp2_edge(values: np.ndarray, dtype) -> np.ndarray:
    return np.sign(values) * (EXP2_EDGE[dtype] - np.abs(values))


def _large_ints(seed: int, inputs: list, varied: list) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for (dtype, data), vary in zip(inputs, varied):
        if vary and dtype == dt.int32:
            values = rng.integers(-LARGE_INTS, LARGE_INTS + 1, size=data.size, dtype=np.int32)
            data = _to_storage(values, dtype)
        out.append((dtype, data))
    return out


def _zeros(inputs: list, varied: list) -> list:
    return [(dtype, np.zeros_like(data) if vary else data)
            for (dtype, data), vary in zip(inputs, varied)]


def extra_sets(g, dims: dict, seed: int, base: list | None = None) -> list:
    """The sets beyond the ordinary one, for the value-range bugs it cannot show: "large"
    (floats +-[32, 128): an exp that overflows without a max subtracted), "exp2 edge" (floats
    near the largest finite exp2 argument), "large ints" (ints in +-LARGE_INTS, when the graph
    has int inputs) and "zeros". Each is built on the ordinary set of ``seed + 1`` and varies
    the inputs that are not parameters: a model's weights keep ordinary values (at +-100 in
    every weight, a deep model's activations overflow in any order of summation, which then
    decides where NaNs appear, bug or not). ``base``: the ordinary inputs to build on
    instead."""
    if base is None:
        base = random_inputs(g, dims, seed + 1)
    varied = [not g.node_parameter(node) for node in g.inputs()]
    kinds = {dtype for (dtype, _), vary in zip(base, varied) if vary}
    sets = []
    if any(dt.is_float(k) for k in kinds):
        large = _map_floats(base, varied, lambda v, _: v * LARGE_SCALE)
        sets.append(CheckSet("large", large, dims))
        sets.append(CheckSet("exp2 edge", _map_floats(base, varied, _exp2_edge), dims))
    if dt.int32 in kinds:
        sets.append(CheckSet("large ints", _large_ints(seed + 2, base, varied), dims))
    if kinds:
        sets.append(CheckSet("zeros", _zeros(base, varied), dims))
    return sets


# disagreement compares this many elements at a time (float64 temporaries of 8 MB each).
_CHUNK = 1 << 20


def disagreement(got: list, want: list, dtypes: list, strict: bool = True,
                 normwise: bool = False) -> str:
    """"" when every output of ``got`` matches ``want`` (value_disagreement), else what
    differs first. Outputs with the same bits agree at once."""
    for i, (a, b, dtype) in enumerate(zip(got, want, dtypes)):
        a = _from_storage(a, dtype).reshape(-1)
        b = _from_storage(b, dtype).reshape(-1)
        if a.shape != b.shape:
            return f"output {i}: {a.size} elements, expected {b.size}"
        if _same_bits(a, b):
            continue
        wrong = value_disagreement(a, b, dtype, strict, normwise)
        if wrong:
            return f"output {i}: {wrong}"
    return ""


def value_disagreement(a: np.ndarray, b: np.ndarray, dtype, strict: bool = True,
                       normwise: bool = False, elements=None) -> str:
    """"" when the values ``a`` (a program's) match ``b`` (the reference's) of an output of
    ``dtype`` (CHECK_TOLERANCE per element, or with ``normwise`` NORMWISE_TOLERANCE over the
    finite elements; infinities exactly; NaNs exactly when ``strict``, else only where the
    reference has none), else what differs first; ``elements`` names each value's element
    (a kernel's samples), by default its position."""
    def name(k):
        return k if elements is None else int(elements[k])
    if normwise and dtype in NORMWISE_TOLERANCE:
        return _normwise_disagreement(a.astype(np.float64), b.astype(np.float64),
                                      NORMWISE_TOLERANCE[dtype], strict, name)
    scale = _scale(b)
    floor, rtol = CHECK_TOLERANCE.get(dtype, (0.0, 0.0))
    for start in range(0, a.size, _CHUNK):
        wrong = _chunk_disagreement(a[start:start + _CHUNK].astype(np.float64),
                                    b[start:start + _CHUNK].astype(np.float64),
                                    floor * scale, rtol, strict)
        if wrong:
            k, what = wrong
            return f"element {name(start + k)} is {a[start + k].item()!r}, " \
                   f"expected {b[start + k].item()!r}{what}"
    return ""


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    if a.dtype != b.dtype:
        return False
    a, b = np.ascontiguousarray(a), np.ascontiguousarray(b)
    bits = np.dtype(f"u{a.itemsize}") if a.itemsize in (1, 2, 4, 8) else None
    if bits is None:
        return False
    return all(np.array_equal(a[k:k + _CHUNK].view(bits), b[k:k + _CHUNK].view(bits))
               for k in range(0, a.size, _CHUNK))


def _scale(want: np.ndarray) -> float:
    """max(1, the median |want| over its finite elements): the tolerance floor's unit."""
    finite = np.abs(want[np.isfinite(want)]) if want.dtype.kind == "f" else np.abs(want)
    return max(1.0, float(np.median(finite))) if finite.size else 1.0


def _normwise_disagreement(a: np.ndarray, b: np.ndarray, tolerance: float,
                           strict: bool, name) -> str:
    """What differs between float64 ``a`` and ``b`` in norm (NaNs and infinities as
    _chunk_disagreement has them; name(k): element k's name), or ""."""
    wrong = _chunk_disagreement(a, b, np.inf, 0.0, strict)
    if wrong:
        k, what = wrong
        return f"element {name(k)} is {a[k].item()!r}, expected {b[k].item()!r}{what}"
    finite = np.isfinite(a) & np.isfinite(b)
    error = float(np.linalg.norm(a[finite] - b[finite]))
    size = float(np.linalg.norm(b[finite]))
    if error > tolerance * size:
        return f"relative error {error / max(size, 1e-300):.3g} in norm, above {tolerance}"
    return ""


def _chunk_disagreement(a: np.ndarray, b: np.ndarray, floor: float, rtol: float,
                        strict: bool):
    """The first element of float64 ``a`` that disagrees with ``b`` and why, or None."""
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    bad = (nan_a != nan_b) if strict else (nan_a & ~nan_b)
    if bad.any():
        return int(np.argmax(bad)), " (NaN)"
    compared = ~(nan_a | nan_b)
    inf = compared & (np.isinf(a) | np.isinf(b))
    bad = inf & (a != b)
    if bad.any():
        return int(np.argmax(bad)), " (infinite)"
    with np.errstate(invalid="ignore", over="ignore"):
        bad = compared & ~inf & (np.abs(a - b) > floor + rtol * np.abs(b))
    if bad.any():
        return int(np.argmax(bad)), ""
    return None


def _run(core_rt, input_ids, output_ids, inputs, dims, seconds=None) -> list:
    """Sets the inputs, executes and reads the outputs; ``seconds`` (a list) gets the time of
    the execute alone (setting a parameter may lay it out, which is no part of a run)."""
    for node, (dtype, data) in zip(input_ids, inputs):
        core_rt.set_data(node, data, dtype)
    t0 = time.perf_counter()
    core_rt.execute(dims)
    if seconds is not None:
        seconds.append(time.perf_counter() - t0)
    return [np.asarray(core_rt.get(o)) for o in output_ids]


def _set_inputs(core_rt, input_ids, inputs, held: dict | None = None) -> None:
    """Sets ``inputs`` on ``core_rt``; with ``held`` (node: the array the runtime holds for
    it, kept up to date here), only those that are not the very array it holds: the check
    sets of one binding share their parameters (a 1B model's weights repacked per set cost
    0.4 s each)."""
    for node, (dtype, data) in zip(input_ids, inputs):
        if held is not None:
            if held.get(node) is data:
                continue
            held[node] = data
        core_rt.set_data(node, data, dtype)


def start_reference(run: SearchRun, verify: bool, reference: str) -> None:
    """Starts compiling the reference before the candidates are extracted, where it does not
    depend on them: the runtime running the graph as written (a graph too big for the
    interpreter, or ``reference`` "runtime"). Its compilers (processes, the GIL released)
    then run beside the extraction and the candidates' lowering (not beside the saturation,
    whose time limit they would eat into on two cores); run_reference waits for it
    (run.reference_compile, None where nothing was started)."""
    run.reference_compile = None
    if not verify or isinstance(run.runtime, NativeRuntime):
        return
    if reference_kind(run, reference) == "runtime":
        pool = ThreadPoolExecutor(max_workers=1)
        run.reference_compile = pool.submit(run.core_rt.compile, run.g)
        pool.shutdown(wait=False)


def reference_kind(run: SearchRun, reference: str) -> str:
    """What the candidates are checked against: ``reference``, or for "auto", "native" (the
    interpreter, output by output) up to AUTO_NATIVE_WORK and on NativeRuntime, else
    "kernels" (kernel by kernel against the interpreter and each kernel's class against the
    graph as written) where the runtime can, else "runtime" (the runtime running the graph
    as written)."""
    if reference != "auto":
        return reference
    if isinstance(run.runtime, NativeRuntime) or \
            _core.graph_work(run.g, run.dims) <= AUTO_NATIVE_WORK:
        return "native"
    return "kernels" if run.core_rt.can_check_kernels() else "runtime"


def second_dims(g, dims: dict) -> dict:
    """The second binding of the symbols every candidate is checked at: each at 1 where
    ``dims`` binds it above 1, else at SECOND_ROWS, or at the most rows below it the graph
    can take there (every view reading inside its operand: a RoPE table of max_context rows
    bounds s + p). A graph that takes none of them keeps the raised symbols at 1."""
    ones = {s: 1 if v > 1 else v for s, v in dims.items()}
    raised = [s for s, v in dims.items() if v <= 1]
    low, high = 1, SECOND_ROWS  # the most rows that fit lie in [low, high]
    while low < high:
        mid = (low + high + 1) // 2
        if _core.view_overrun(g, {**ones, **{s: mid for s in raised}}):
            high = mid - 1
        else:
            low = mid
    return {**ones, **{s: low for s in raised}}


def finish_reference(run: SearchRun) -> None:
    """Waits for a reference compile start_reference began and the search did not (a
    search that failed before its reference): nothing compiles under the runtime after."""
    future = getattr(run, "reference_compile", None)
    if future is not None:
        future.exception()  # waits; its error, if any, was the search's to report


def run_reference(run: SearchRun, verify: bool, reference: str) -> None:
    """Reference: the outputs every candidate must match on each check set, from the
    interpreter or from the runtime running the graph as written (``reference``; "auto"
    picks by AUTO_NATIVE_WORK). The ordinary set (random inputs of ``seed``) always; the
    extra sets (check.extra_sets) against the interpreter, for graphs up to
    EXTRA_SETS_WORK at the search's dims or at SHRUNK_DIM; a set the interpreter cannot
    run (Gather indices out of range) is left out. Nothing to check when ``verify`` is
    off, or for budget 1 on NativeRuntime with the graph as written. When the reference
    fails on the ordinary set, no candidate can be checked: the graph as written is the
    only one."""
    g = run.g
    run.sets = []
    on_native = isinstance(run.runtime, NativeRuntime)
    run.need_check = verify and (run.budget > 1
                                 or run.texts[run.order[0][0]] != run.original_text
                                 or not on_native)
    work = _core.graph_work(g, run.dims)
    reference = reference_kind(run, reference)
    if not run.need_check or reference == "kernels":
        finish_reference(run)
        with _Phase(run.report, "reference"):
            run.inputs = random_inputs(g, run.dims, run.seed, run.normwise)
        if not run.need_check:
            return
        run.report.reference = "the interpreter, kernel by kernel" + (
            ", each kernel's class against the graph as written"
            if getattr(run, "space", None) is not None else "")
        ordinary = _ordinary_by_kernel(run, run.inputs)
        run.sets = [ordinary]
        run.report.check_sets = ["ordinary"]
        with _Phase(run.report, "reference run"):
            _add_kernel_extra_sets(run, _add_second_binding(run, kernels_only=True))
        return
    ref_rt = _core.NativeRuntime() if reference == "native" else run.core_rt
    by_kernel = ref_rt is run.core_rt and run.core_rt.can_check_kernels()
    run.report.reference = "native" if reference == "native" else \
        f"{run.core_rt.name} running the graph as written" + \
        (", and the interpreter kernel by kernel" if by_kernel else "")
    run.inputs = None
    try:
        # The compile (C++, GIL released: a runtime's compilers run as processes) and the
        # drawing of the inputs (numpy) overlap: at 1B parameters each takes seconds.
        with _Phase(run.report, "reference"), ThreadPoolExecutor(max_workers=1) as pool:
            compiling = run.reference_compile if ref_rt is run.core_rt else None
            run.reference_compile = None
            compiling = compiling or pool.submit(ref_rt.compile, g)
            run.inputs = random_inputs(g, run.dims, run.seed, run.normwise)
            compiling.result()
        with _Phase(run.report, "reference run"):
            ordinary = CheckSet("ordinary", run.inputs, run.dims, strict=True,
                                by_kernel=by_kernel)
            ordinary.want = _reference_outputs(run, ref_rt, ordinary)
    except LuminalError as e:
        if run.inputs is None:
            raise  # inputs too big to draw (random_inputs): nothing can run the graph
        # E.g. Gather indices out of range: keep the graph as written.
        run.programs = [run.original]
        run.texts = _Texts(run.programs)
        run.order = [(0, _core.TuningChoice())]
        run.report.wrong_rules.append(f"not checked (reference failed on random inputs: "
                                      f"{e})")
        run.need_check = False
        run.combine = False
        return
    run.sets = [ordinary]
    run.report.check_sets = ["ordinary"]
    with _Phase(run.report, "reference run"):
        _add_extra_sets(run, work)
        second = _add_second_binding(run, kernels_only=False)
        if second is not None:
            _add_kernel_extra_sets(run, second)


def _ordinary_by_kernel(run: SearchRun, inputs: list) -> CheckSet:
    """The ordinary set at the search's dims (``inputs``: random_inputs of run.seed), checked
    kernel by kernel, its ints drawn again below a bound where a Gather finds them out of
    range."""
    return CheckSet("ordinary", inputs, run.dims, strict=True, by_kernel=True,
                    redraw=lambda high: random_inputs(run.g, run.dims, run.seed, run.normwise,
                                                      high))


def _reference_outputs(run: SearchRun, ref_rt, ordinary) -> list:
    """The reference's outputs on the ordinary set; where an index falls out of range (a
    Gather reading a table through random ints), its ints drawn again from the next of
    INT_HIGHS (the inputs of ``ordinary`` and run.inputs replaced)."""
    g = run.g
    for high in INT_HIGHS:
        if high != INT_HIGHS[0]:
            run.inputs = random_inputs(g, run.dims, run.seed, run.normwise, high)
            ordinary.inputs = run.inputs
        try:
            if not ordinary.by_kernel:
                return _run(ref_rt, g.inputs(), g.outputs(), run.inputs, run.dims)
            # The graph as written, checked kernel by kernel itself: a fault in code every
            # program shares shows here, and no candidate can then be trusted end to end.
            wrong = kernel_disagreement(run, run.original, ordinary)
            if wrong:  # its outputs are no reference: candidates are checked by kernel
                run.reference_wrong = wrong
                run.report.wrong_rules.append(f"the graph as written on {ref_rt.name}, on "
                                              f"the ordinary set: {wrong}")
                return None
            return [np.asarray(ref_rt.get(o)) for o in g.outputs()]
        except LuminalError as e:
            if high == INT_HIGHS[-1] or "out of range" not in str(e):
                raise
    raise AssertionError("unreachable")


def _add_extra_sets(run: SearchRun, work: float) -> None:
    """The extra check sets with the interpreter's outputs on them (run_reference)."""
    g = run.g
    dims = run.dims
    if work > EXTRA_SETS_WORK:
        dims = {s: min(v, SHRUNK_DIM) for s, v in run.dims.items()}
        if not dims or _core.graph_work(g, dims) > EXTRA_SETS_WORK:
            run.report.check_sets.append(f"no others (work {work:.3g} > "
                                         f"{EXTRA_SETS_WORK:.3g})")
            return
    native = _core.NativeRuntime()
    native.compile(g)
    shrunk = "" if dims == run.dims else f" at {dims}"
    for check in extra_sets(g, dims, run.seed):
        try:
            check.want = _run(native, g.inputs(), g.outputs(), check.inputs, dims)
        except LuminalError as e:
            run.report.check_sets.append(f"{check.name} (left out: {e})")
            continue
        run.sets.append(check)
        run.report.check_sets.append(check.name + shrunk)


def _add_second_binding(run: SearchRun, kernels_only: bool) -> tuple | None:
    """The ordinary check set at the second binding of the symbols (second_dims), whose
    parameters are drawn from the other distribution (init_scale where the ordinary set's
    are not, and the reverse; where outputs are compared end to end in norm, the same).
    Against the interpreter's outputs where the graph there is small enough for it
    (AUTO_NATIVE_WORK) and not ``kernels_only`` (reference "kernels"), else kernel by kernel
    where the runtime can (then returns its (dims, inputs), for _add_kernel_extra_sets); a
    binding the graph cannot take (a negative dim) is left out."""
    g = run.g
    dims = second_dims(g, run.dims)
    if dims == run.dims:
        return None
    at = _at(dims)
    try:
        overrun = _core.view_overrun(g, dims)
        if overrun:
            raise ShapeError(overrun)
        work = _core.graph_work(g, dims)
        by_kernel = kernels_only or work > AUTO_NATIVE_WORK
        if by_kernel and not run.core_rt.can_check_kernels():
            run.report.check_sets.append(f"none{at} (work {work:.3g}; {run.core_rt.name} "
                                         f"has no kernel-by-kernel check)")
            return None
        init_scaled = not run.normwise if by_kernel else run.normwise
        base = random_inputs(g, dims, run.seed + 1, init_scaled)
    except LuminalError as e:
        run.report.check_sets.append(f"none{at} (left out: {e})")
        return None
    ordinary = CheckSet("ordinary" + at, base, dims, strict=True, by_kernel=by_kernel,
                        redraw=lambda high: random_inputs(g, dims, run.seed + 1, init_scaled,
                                                          high), run_repeats=not by_kernel)
    if not by_kernel:
        try:
            native = _core.NativeRuntime()
            native.compile(g)
            ordinary.want = _run(native, g.inputs(), g.outputs(), base, dims)
        except LuminalError as e:
            run.report.check_sets.append(f"{ordinary.name} (left out: {e})")
            return None
    run.sets.append(ordinary)
    run.report.check_sets.append(ordinary.name + (" (kernel by kernel)" if by_kernel else ""))
    return (dims, base) if by_kernel else None


def _at(dims: dict) -> str:
    """The suffix (" at p=1, s=21") by which a check set's name gives its binding."""
    return " at " + ", ".join(f"{s}={v}" for s, v in sorted(dims.items()))


def _add_kernel_extra_sets(run: SearchRun, second: tuple | None) -> None:
    """The extra sets (extra_sets), kernel by kernel, at whichever binding has less work:
    the search's dims, on the ordinary set's inputs, or the second binding's ``second`` (its
    dims and inputs): each set of one binding shares its parameters, which are then set on
    the runtime once."""
    g = run.g
    dims, base, at = run.dims, run.inputs, ""
    if second is not None and _core.graph_work(g, second[0]) < _core.graph_work(g, dims):
        dims, base = second
        at = _at(dims)
    # At the search's dims right after the ordinary set, whose parameters they keep.
    place = len(run.sets) if at else 1
    for check in extra_sets(g, dims, run.seed, base):
        check.name += at
        check.by_kernel = True
        check.normwise = True
        check.run_repeats = False  # a value-range bug is the code's: each code runs once
        run.sets.insert(place, check)
        run.report.check_sets.insert(place, check.name + " (kernel by kernel)")
        place += 1


def kernel_disagreement(run: SearchRun, prog, check: CheckSet, held: dict | None = None,
                        stop_after: float = 0.0, ran: dict | None = None) -> str:
    """Runs the compiled ``prog`` kernel by kernel on ``check``'s inputs (set first), each
    kernel checked against the interpreter (runtime/kernel_check.h): "" when every kernel's
    samples match (value_disagreement, by the kernel's dtype) and no kernel left an element
    unwritten or changed another's operand, else which kernel and what. Where the
    interpreter finds a Gather index out of range, the set's ints are drawn again from the
    next of INT_HIGHS (the set changed for every candidate after). ``held``: see _set_inputs.
    ``stop_after``: the kernels' seconds past which the run stops (0: none); ``ran`` gets the
    kernels' "seconds", whether it "stopped", and how many kernels it "checked"."""
    highs = list(INT_HIGHS)
    space = getattr(run, "space", None)
    extra = check.normwise  # an extra set
    rewritten = space is not None and prog is not run.original and not extra
    original, original_of = (run.g, space.original_nodes(prog)) if rewritten else (None, [])
    # Kernels an earlier candidate passed on this set (the same code for the same class):
    # sampled as repeats here. A search's candidates share most of their kernels.
    checked = run.checked_kernels.setdefault(check.name, set())
    samples = check.samples or ((EXTRA_KERNEL_SAMPLES, EXTRA_KERNEL_REPEAT_SAMPLES) if extra
                                else (KERNEL_SAMPLES, KERNEL_REPEAT_SAMPLES))
    while True:
        _set_inputs(run.core_rt, prog.inputs, check.inputs, held)
        triples = [(node, data, dtype) for node, (dtype, data) in zip(prog.inputs, check.inputs)]
        try:
            report = run.core_rt.check_kernels(
                check.dims, triples, *samples, KERNEL_STEP_BUDGET, run.seed, original,
                original_of, checked, stop_after, check.run_repeats)
            break
        except LuminalError as e:
            highs.pop(0)
            if "out of range" not in str(e) or check.redraw is None or not highs:
                raise
            check.inputs = check.redraw(highs[0])
            if getattr(run, "sets", None) and check is run.sets[0]:
                run.inputs = check.inputs
    kernels = report["kernels"]
    if ran is not None:
        ran.update(seconds=report["kernel_seconds"], stopped=report["stopped"],
                   checked=len(kernels))
    # The kernels whose samples equal the interpreter's bit for bit (NaNs where it has NaNs)
    # need no tolerance: one comparison over all of them (hundreds of kernels in a model).
    got_all = np.array([v for _, _, _, _, got, _, _, _ in kernels for v in got], np.float64)
    want_all = np.array([v for _, _, _, _, _, want, _, _ in kernels for v in want], np.float64)
    same = (got_all == want_all) | (np.isnan(got_all) & np.isnan(want_all))
    unequal_before = np.concatenate([[0], np.cumsum(~same)])  # per sample position
    ends = np.cumsum([len(elements) for _, _, _, elements, _, _, _, _ in kernels])
    for (k, root, dtype, elements, got, want, problem, orig), end in zip(kernels, ends):
        differs = unequal_before[end] > unequal_before[end - len(elements)]
        where = f"kernel {k} (computing %{root}, {dt.name(dtype)})"
        if problem:
            return f"{where}: {problem}"
        if not differs:
            continue
        wrong = value_disagreement(np.asarray(got), np.asarray(want), dtype, check.strict,
                                   run.normwise or check.normwise, elements)
        if wrong and orig >= 0:
            wrong = f"against the graph as written's %{orig} (its code or a rewrite): {wrong}"
        if wrong:
            return f"{where}: {wrong}"
    checked |= report["checked"]
    return ""


def check_as_written(run: SearchRun) -> str | None:
    """Where the candidates were checked kernel by kernel alone (no reference outputs) and
    none passed: the graph as written compiled and checked the same way on the ordinary set,
    before the search falls back to it. What is wrong with it (also in the report's wrong
    rules), or None (also where it cannot run at the check's dims)."""
    if not (run.need_check and run.sets and run.sets[0].by_kernel and run.sets[0].want is None):
        return None
    try:
        run.core_rt.compile(run.g)
        wrong = kernel_disagreement(run, run.original, run.sets[0])
    except LuminalError as e:  # e.g. an output no memory holds: execute will say so
        run.report.wrong_rules.append(f"the graph as written not checked ({e})")
        return None
    finally:
        run.core_rt.clear_data()
    if not wrong:
        return None
    run.report.wrong_rules.append(f"the graph as written on {run.core_rt.name}, on the "
                                  f"ordinary set: {wrong}")
    return wrong


def check_candidate(run: SearchRun, prog, res: CandidateResult, sets: list | None = None,
                    lost_after: float = 0.0) -> float:
    """Runs the compiled ``prog`` on each of ``sets`` (default: every check set, the
    ordinary one first); on the first that disagrees, sets res.detail and res.failed_set.
    Leaves the ordinary inputs set. Returns the seconds of the ordinary run (None when it
    was not among ``sets``). ``lost_after``: the seconds past which a run of the ordinary set
    checked kernel by kernel has lost the search's race (0: none); the check stops there,
    and res becomes "lost" (its seconds: the kernels' until then)."""
    seconds = []
    held = {}  # what the runtime holds, while only kernel_disagreement sets inputs
    for check in list(run.sets if sets is None else sets):
        t0 = time.perf_counter()
        try:
            if check.by_kernel:
                first = check is run.sets[0]
                ran = {}
                wrong = kernel_disagreement(run, prog, check, held,
                                            lost_after if first else 0.0, ran)
                if first:
                    seconds.append(ran["seconds"])
                if ran["stopped"] and not wrong:
                    res.status, res.seconds = "lost", ran["seconds"]
                    res.detail = (f"lost: stopped after {ran['checked']} kernels, which ran "
                                  f"{ran['seconds'] * 1e3:.3f} ms, over {lost_after * 1e3:.3f}"
                                  f" ms")
                    return ran["seconds"]
                if not wrong and check.want is not None:
                    got = [np.asarray(run.core_rt.get(o)) for o in prog.outputs]
                    wrong = disagreement(got, check.want, run.out_dtypes, check.strict,
                                         run.normwise)
            else:
                held = None
                got = _run(run.core_rt, prog.inputs, prog.outputs, check.inputs, check.dims,
                           seconds if check is run.sets[0] else None)
                wrong = disagreement(got, check.want, run.out_dtypes, check.strict,
                                     run.normwise)
        except LuminalError as e:
            if check is run.sets[0] or "out of range" not in str(e):
                raise
            # An extra set the graph's Gathers cannot take (large ints into a table).
            run.sets.remove(check)
            run.report.check_sets = [n if n != check.name + " (kernel by kernel)"
                                     else f"{check.name} (left out: {e})"
                                     for n in run.report.check_sets]
            continue
        finally:
            spent = run.report.check_seconds
            spent[check.name] = spent.get(check.name, 0.0) + time.perf_counter() - t0
        if wrong:
            res.detail = f"on the {check.name} set: {wrong}"
            res.failed_set = check.name
            break
    if len(run.sets) > 1 or run.sets[0].by_kernel:
        _set_inputs(run.core_rt, prog.inputs, run.inputs, held)
    return seconds[0] if seconds else None


def check_rest(run: SearchRun, i: int, compile_it) -> bool:
    """The sets after the ordinary one, for candidate ``i`` (of run.results) if it was checked
    on the ordinary set alone (deferred: the search runs a candidate at that set's dims and
    inputs only, before the pick, driver.attempt): ``compile_it()`` puts it back in the
    runtime, then it is checked, and marked wrong (the wrong rule reported) or failed if it
    is. Whether it passed."""
    res = run.results[i]
    if not res.deferred:
        return True
    res.deferred = False
    p, _ = run.order[i]
    try:
        compile_it()
        with _Phase(run.report, "check"):
            check_candidate(run, run.programs[p], res, run.sets[1:])
    except LuminalError as e:
        res.status = "failed"
        res.detail = f"{type(e).__name__}: {e}"
        return False
    if not res.detail:
        return True
    res.status = "wrong"
    run.report.wrong_rules.append(f"program {p} [{res.choice}] {res.detail}\n{run.texts[p]}")
    return False


def recheck(run: SearchRun, program) -> str:
    """The loaded ``program`` against the interpreter on the ordinary set, kernel by kernel
    where the runtime can (any size), else output by output: "" when they agree (or the
    interpreter cannot run these inputs), else what differs. Leaves no check inputs in the
    runtime."""
    inputs = random_inputs(run.g, run.dims, run.seed, run.normwise)
    if run.core_rt.can_check_kernels():
        check = _ordinary_by_kernel(run, inputs)
        check.samples = (RECHECK_SAMPLES, RECHECK_REPEAT_SAMPLES)
        try:
            return kernel_disagreement(run, program, check)
        except LuminalError as e:
            return "" if "out of range" in str(e) else f"{type(e).__name__}: {e}"
        finally:
            run.core_rt.clear_data()
    native = _core.NativeRuntime()
    try:
        native.compile(run.g)
        want = _run(native, run.g.inputs(), run.g.outputs(), inputs, run.dims)
    except LuminalError:
        return ""
    got = _run(run.core_rt, program.inputs, program.outputs, inputs, run.dims)
    run.core_rt.clear_data()
    return disagreement(got, want, run.out_dtypes, normwise=run.normwise)
