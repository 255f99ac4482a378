"""A CPU emulator for luminal's generated Metal Shading Language, for tests on any system, as
tests/cuda_emu.py is for CUDA (whose fibers, barriers and shuffles it shares): the MSL of a
graph is compiled by the host C++ compiler against a small header that maps MSL onto C++
(address spaces and [[attributes]] dropped, threadgroup memory shared by a threadgroup's
fibers, threadgroup_barrier a barrier, simd_shuffle_xor a simdgroup-wide exchange, as_type a bit
copy, atomic_store_explicit a store, simdgroup matrices held whole by each lane), then every
kernel runs with the runtime's own launch plan
(runtime/metal/metal_plan.h) and calling convention (codegen/metal/renderer.h). It checks the
kernels' logic (indexing, reductions, tiles, the calling convention); it says nothing about
speed, and it does not check that Apple's compiler accepts the source (that needs a Mac)."""

from __future__ import annotations

import contextlib
import ctypes
import re

import numpy as np

from luminal import _core
from luminal.runtime import _from_storage

import cuda_emu

# After cuda_emu.SHIM: MSL's spellings in C++.
METAL_SHIM = r"""
#include <cstdint>
typedef unsigned short ushort;
struct uint3 { unsigned x, y, z; };
inline uint3 emu_uint3(const dim3& d) { return {d.x, d.y, d.z}; }
namespace metal {
enum class mem_flags { mem_none, mem_device, mem_threadgroup };
inline void threadgroup_barrier(mem_flags) { __syncthreads(); }
template <typename T>
T simd_shuffle_xor(T v, ushort mask) { return __shfl_xor_sync(0xffffffffu, v, (int)mask); }
template <typename To, typename From>
To as_type(From v) {
  static_assert(sizeof(To) == sizeof(From), "as_type keeps the size");
  To r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}
struct atomic_int { int32_t value; };
// A simdgroup matrix: every lane holds all of it (the operations are collective, so each lane
// computing the whole result gives what the simdgroup's lanes share).
template <typename T, int Cols, int Rows>
struct simdgroup_matrix { T v[Rows][Cols]; };
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
template <typename T, int Cols, int Rows>
simdgroup_matrix<T, Cols, Rows> make_filled_simdgroup_matrix(T x) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int r = 0; r < Rows; r++) for (int c = 0; c < Cols; c++) m.v[r][c] = x;
  return m;
}
template <typename T, int Cols, int Rows>
void simdgroup_load(simdgroup_matrix<T, Cols, Rows>& d, const T* src, unsigned long per_row) {
  for (int r = 0; r < Rows; r++) for (int c = 0; c < Cols; c++) d.v[r][c] = src[r * per_row + c];
}
template <typename T, int Cols, int Rows>
void simdgroup_store(const simdgroup_matrix<T, Cols, Rows>& a, T* dst, unsigned long per_row) {
  for (int r = 0; r < Rows; r++) for (int c = 0; c < Cols; c++) dst[r * per_row + c] = a.v[r][c];
}
template <typename T, int N>
void simdgroup_multiply_accumulate(simdgroup_matrix<T, N, N>& d, const simdgroup_matrix<T, N, N>& a,
                                   const simdgroup_matrix<T, N, N>& b,
                                   const simdgroup_matrix<T, N, N>& c) {
  simdgroup_matrix<T, N, N> out;
  for (int r = 0; r < N; r++)
    for (int col = 0; col < N; col++) {
      T acc = c.v[r][col];
      for (int k = 0; k < N; k++) acc += a.v[r][k] * b.v[k][col];
      out.v[r][col] = acc;
    }
  d = out;
}
enum memory_order { memory_order_relaxed };
inline void atomic_store_explicit(atomic_int* p, int32_t v, memory_order) { p->value = v; }
}  // namespace metal
#define kernel
#define device
#define constant
#define thread
#define threadgroup static
"""

_SIG = re.compile(r"^kernel void (\w+)\((.*)\) \{$", re.M)
_ATTR = re.compile(r"\s*\[\[[^\]]*\]\]")
_POSITIONS = {"threadIdx": "emu_uint3(threadIdx)", "blockIdx": "emu_uint3(blockIdx)",
              "blockDim": "emu_uint3(blockDim)", "gridDim": "emu_uint3(gridDim)"}


def _adapt(source: str) -> tuple[str, dict]:
    """The MSL made host C++ (its include dropped: the shim is metal_stdlib) and each kernel's
    parameters: ("ptr", type) for a buffer, the dims or the fault flag, ("pos", expression) for
    a thread position."""
    params = {}
    for name, plist in _SIG.findall(source):
        kinds = []
        for p in plist.split(", "):
            decl = _ATTR.sub("", p).strip()
            var = decl.split()[-1].lstrip("*&")
            if var in _POSITIONS:
                kinds.append(("pos", _POSITIONS[var]))
            else:
                base = decl[: decl.rindex("*") + 1]
                kinds.append(("ptr", " ".join(w for w in base.split() if w != "device")))
        params[name] = kinds
    for header in ("#include <metal_stdlib>", "#include <metal_simdgroup_matrix>"):
        source = source.replace(header, "")
    return source, params


class Emulated(cuda_emu.Emulated):
    """cuda_emu.Emulated for the Metal renderer's source and launch plan."""

    SHIMS = (cuda_emu.SHIM, METAL_SHIM)

    def _render(self, cx, tc) -> str:
        return _core.metal_render(cx._g, tc)

    def _adapt(self, source: str) -> tuple[str, dict]:
        return _adapt(source)

    def _launcher(self, i: int, name: str, kinds: list) -> str:
        args, k = [], 0
        for kind, text in kinds:
            if kind == "pos":
                args.append(text)
                continue
            args.append(f"({text.replace('atomic_int', 'metal::atomic_int')})a[{k}]")
            k += 1
        return (f'extern "C" void launch_{i}_{name}(void** a, unsigned gx, unsigned gy, '
                f"unsigned gz, unsigned bx) {{ emu_run(gx, gy, gz, bx, [&] {{ "
                f"{name}({', '.join(args)}); }}); }}\n")

    def _fault_accessor(self, i: int) -> str:
        return ""  # a buffer of the launch (the calling convention's last)

    def _plan(self, cx, tc, dyn_map):
        # Few threadgroups keep grid-stride kernels striding.
        return _core.metal_launch_plan(cx._g, tc, dyn_map, 32)

    def _fault_flag(self, i: int):
        if not hasattr(self, "_fault"):
            self._fault = ctypes.c_int32(0)
        return self._fault

    def _kernel_args(self, pointers: list, dims: list, fault) -> list:
        """Buffers, the dims' values (one array of at least one), then the index fault flag
        (codegen/metal/renderer.h)."""
        self._dims = (ctypes.c_int64 * max(1, len(dims)))(*(d.value for d in dims))
        return pointers + [ctypes.addressof(self._dims), ctypes.addressof(fault)]


def render(cx, choice: dict | None = None) -> str:
    """The MSL of graph cx under schedule params ``choice``."""
    from luminal import metal

    return metal.render(cx, choice)


class EmulatedRuntime:
    """What a model's weights and a session's steps ask of a runtime (set_data, set_storage,
    execute, get), over one emulated MSL program of graph ``cx`` whose outputs are
    ``outputs``: code that drives a runtime runs through the Metal renderer unchanged."""

    def __init__(self, cx, outputs, workdir):
        self._graph = cx
        self.outputs = list(outputs)
        self.emu = Emulated([(cx, None, dict(cx.dyn_map))], str(workdir))
        self.feeds, self.values = {}, {}

    def sequence(self):
        return contextlib.nullcontext()

    def _keeps_only_its_layout(self, tensor) -> bool:
        return False

    def set_data(self, tensor, data) -> None:
        self.feeds[tensor] = np.asarray(data)

    def set_storage(self, tensor, storage) -> None:
        """A parameter's storage (16-bit words, blocks) as the values Emulated.run takes."""
        from luminal import dtype as dt

        storage = np.asarray(storage)
        if dt.is_quantized(tensor.dtype):
            self.feeds[tensor] = storage
        else:
            self.feeds[tensor] = _from_storage(storage.reshape(-1), tensor.dtype)

    def execute(self, dims: dict | None = None) -> None:
        dims = dict(self._graph.dyn_map, **(dims or {}))
        self.emu.replan(0, dims)
        got = self.emu.run(0, self.feeds, self.outputs)
        for t, value in zip(self.outputs, got):
            shape = tuple(d if isinstance(d, int) else -1 for d in t.shape)
            self.values[t.id] = value.astype(np.float32).reshape(shape)

    def get(self, tensor) -> np.ndarray:
        return self.values[tensor.id]
