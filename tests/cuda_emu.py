"""A CPU emulator for luminal's generated CUDA, for tests without a GPU: the CUDA source is
compiled by the host C++ compiler against a small shim (blockIdx/threadIdx, __syncthreads as a
block barrier, warp shuffles and mma.sync as warp-wide exchanges; each CUDA thread of a block
a fiber on one OS thread, switched at barriers), then every kernel of the program runs with
the runtime's own launch plan. It checks
the kernels' logic (indexing, reductions, tiling, fragment layouts as we read the PTX ISA); it
says nothing about speed, and it cannot check what the real mma.sync layout is."""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess

import numpy as np

import luminal as lm
from luminal import _core
from luminal.runtime import _from_storage, _to_storage

SHIM = r"""
#include <ucontext.h>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
#include <math.h>

struct dim3 { unsigned x = 1, y = 1, z = 1; };
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return {a, b, c, d}; }
dim3 threadIdx, blockIdx;  // the running fiber's: set by emu_run before it resumes one
dim3 blockDim, gridDim;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(n)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))

// A barrier of `expected` fibers: the last to arrive opens it; the others yield until then.
struct EmuBarrier {
  unsigned expected = 0, count = 0;
  unsigned long generation = 0;
};
struct EmuBlock {
  EmuBarrier block;
  std::vector<EmuBarrier> warps;
  std::vector<unsigned> slots;  // one word per thread, for shuffles
  std::vector<unsigned> frag;   // six words per thread, for mma
};
struct EmuFiber {
  ucontext_t context;
  unsigned index = 0;
  bool done = false;
};
EmuBlock* emu_block = nullptr;
EmuFiber* emu_current = nullptr;
ucontext_t emu_scheduler;
const std::function<void()>* emu_body = nullptr;

inline void emu_wait(EmuBarrier& b) {
  unsigned long generation = b.generation;
  if (++b.count == b.expected) {
    b.count = 0;
    b.generation++;
    return;
  }
  while (b.generation == generation) swapcontext(&emu_current->context, &emu_scheduler);
}

inline void __syncthreads() { emu_wait(emu_block->block); }

template <typename T>
T __shfl_xor_sync(unsigned, T v, int o) {
  static_assert(sizeof(T) == 4, "32-bit shuffles only");
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned bits;
  std::memcpy(&bits, &v, 4);
  emu_block->slots[threadIdx.x] = bits;
  emu_wait(emu_block->warps[warp]);
  unsigned got = emu_block->slots[(warp << 5) | (lane ^ (unsigned)o)];
  emu_wait(emu_block->warps[warp]);
  T r;
  std::memcpy(&r, &got, 4);
  return r;
}

inline float emu_bf16(unsigned short h) {
  unsigned u = (unsigned)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float emu_f16(unsigned short h) {
  unsigned sign = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0 ? std::ldexp((float)m, -24)
          : e == 31 ? (m ? NAN : INFINITY) : std::ldexp((float)(m | 1024), (int)e - 25);
  return sign ? -v : v;
}

// D(16x8) += A(16x16, row) * B(16x8, col), fragments as the PTX ISA lays out m16n8k16.
template <bool BF16>
void emu_mma(float* d, const unsigned* a, const unsigned* b) {
  unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned* s = &emu_block->frag[warp * 32 * 6];
  for (int i = 0; i < 4; i++) s[lane * 6 + i] = a[i];
  s[lane * 6 + 4] = b[0];
  s[lane * 6 + 5] = b[1];
  emu_wait(emu_block->warps[warp]);
  float A[16][16], B[16][8];
  auto lo = [](unsigned r) { return BF16 ? emu_bf16(r & 0xffff) : emu_f16(r & 0xffff); };
  auto hi = [](unsigned r) { return BF16 ? emu_bf16(r >> 16) : emu_f16(r >> 16); };
  for (int L = 0; L < 32; L++) {
    int g = L >> 2, t = L & 3;
    const unsigned* r = &s[L * 6];
    A[g][2 * t] = lo(r[0]); A[g][2 * t + 1] = hi(r[0]);
    A[g + 8][2 * t] = lo(r[1]); A[g + 8][2 * t + 1] = hi(r[1]);
    A[g][2 * t + 8] = lo(r[2]); A[g][2 * t + 9] = hi(r[2]);
    A[g + 8][2 * t + 8] = lo(r[3]); A[g + 8][2 * t + 9] = hi(r[3]);
    B[2 * t][g] = lo(r[4]); B[2 * t + 1][g] = hi(r[4]);
    B[2 * t + 8][g] = lo(r[5]); B[2 * t + 9][g] = hi(r[5]);
  }
  int g = lane >> 2, t = lane & 3;
  for (int q = 0; q < 4; q++) {
    int row = g + (q >> 1) * 8, col = 2 * t + (q & 1);
    float acc = 0;
    for (int k = 0; k < 16; k++) acc += A[row][k] * B[k][col];
    d[q] += acc;
  }
  emu_wait(emu_block->warps[warp]);
}

void emu_fiber_main() {
  (*emu_body)();
  emu_current->done = true;  // returns to emu_scheduler (uc_link)
}

// The grid's blocks one after another (each block shares the one copy of the kernel's
// __shared__ arrays); a block's threads are fibers resumed in turn until all have returned.
void emu_run(unsigned gx, unsigned gy, unsigned gz, unsigned bx, const std::function<void()>& body) {
  const size_t stack = 256 * 1024;
  gridDim = {gx, gy, gz};
  blockDim = {bx, 1, 1};
  EmuBlock blk;
  blk.block.expected = bx;
  blk.warps.resize(bx / 32);
  for (EmuBarrier& w : blk.warps) w.expected = 32;
  blk.slots.assign(bx, 0);
  blk.frag.assign(bx * 6, 0);
  emu_block = &blk;
  emu_body = &body;
  std::vector<EmuFiber> fibers(bx);
  std::unique_ptr<char[]> stacks(new char[stack * bx]);
  for (unsigned z = 0; z < gz; z++)
    for (unsigned y = 0; y < gy; y++)
      for (unsigned x = 0; x < gx; x++) {
        blockIdx = {x, y, z};
        for (unsigned t = 0; t < bx; t++) {
          EmuFiber& f = fibers[t];
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = stacks.get() + t * stack;
          f.context.uc_stack.ss_size = stack;
          f.context.uc_link = &emu_scheduler;
          makecontext(&f.context, emu_fiber_main, 0);
          f.index = t;
          f.done = false;
        }
        for (unsigned live = bx; live > 0;)
          for (EmuFiber& f : fibers) {
            if (f.done) continue;
            emu_current = &f;
            threadIdx = {f.index, 0, 0};
            swapcontext(&emu_scheduler, &f.context);
            if (f.done) live--;
          }
      }
}
"""

EMU_MMA = """
static inline void lm_mma_f16(float* d, const uint32_t* a, const uint32_t* b) { emu_mma<false>(d, a, b); }
static inline void lm_mma_bf16(float* d, const uint32_t* a, const uint32_t* b) { emu_mma<true>(d, a, b); }
"""

_SIG = re.compile(r'extern "C" __global__ void __launch_bounds__\(\d+\) (\w+)\(([^)]*)\)')


def compiler() -> str | None:
    for cc in ("g++", "clang++", "c++"):
        if shutil.which(cc):
            return cc
    return None


def _adapt(source: str) -> tuple[str, dict]:
    """The generated source made host C++: the PTX helpers swapped for the emulator's, kernels
    with C++ linkage. Returns it and each kernel's parameter types."""
    start = source.find("/* D += A * B on tensor cores")
    if start >= 0:
        end = source.find("\n\n", start)
        source = source[:start] + EMU_MMA + source[end:]
    params = {}
    for name, plist in _SIG.findall(source):
        types = []
        for p in plist.split(","):
            p = p.strip()
            types.append(p[: p.index("*") + 1] if "*" in p else "int64_t")
        params[name] = types
    return source.replace('extern "C" __global__', "__global__"), params


class Emulated:
    """Graphs compiled together into one shared library; run(i, feeds) executes graph i. The
    hooks (_render, _adapt, _launcher, _plan, _fault_flag, _kernel_args) are what a backend of
    another source language overrides (tests/metal_emu.py)."""

    SHIMS = (SHIM,)

    def __init__(self, items, workdir):
        """``items``: (graph, choice dict, dyn_map) triples."""
        self.items = items
        self.plans = []
        self.choices = []
        parts = list(self.SHIMS)
        for i, (cx, choice, dyn_map) in enumerate(items):
            tc = _core.TuningChoice()
            tc.params = sorted((choice or {}).items())
            body, params = self._adapt(self._render(cx, tc))
            parts.append(f"namespace emu{i} {{\n{body}\n")
            for name, types in params.items():
                parts.append(self._launcher(i, name, types))
            parts.append("}\n")
            parts.append(self._fault_accessor(i))
            self.plans.append(self._plan(cx, tc, dyn_map))
            self.choices.append(tc)
        code = "".join(parts)
        digest = hashlib.sha256(code.encode()).hexdigest()[:16]
        lib = os.path.join(workdir, f"emu_{digest}.so")
        if not os.path.exists(lib):
            src_path = os.path.join(workdir, f"emu_{digest}.cc")
            with open(src_path, "w") as f:
                f.write(code)
            cmd = [compiler(), "-std=c++20", "-O1", "-shared", "-fPIC", "-w",
                   src_path, "-o", lib]
            subprocess.run(cmd, check=True, capture_output=True, text=True)
        self.lib = ctypes.CDLL(lib)

    def replan(self, i: int, dyn_map: dict) -> None:
        """Graph ``i``'s launches for other values of its symbols (no new compile)."""
        self.plans[i] = self._plan(self.items[i][0], self.choices[i], dyn_map)

    # ---- the CUDA backend's hooks ----------------------------------------------------------
    def _render(self, cx, tc) -> str:
        return _core.cuda_render(cx._g, "sm_90", tc)

    def _adapt(self, source: str) -> tuple[str, dict]:
        return _adapt(source)

    def _launcher(self, i: int, name: str, types: list) -> str:
        args = ", ".join(f"*({t}*)a[{k}]" if t == "int64_t" else f"({t})a[{k}]"
                         for k, t in enumerate(types))
        return (f'extern "C" void launch_{i}_{name}(void** a, unsigned gx, unsigned gy, '
                f"unsigned gz, unsigned bx) {{ emu_run(gx, gy, gz, bx, [&] {{ {name}({args}); }}); }}\n")

    def _fault_accessor(self, i: int) -> str:
        # The module's index fault flag (codegen kIndexFault), as CudaRuntime reads it.
        return f'extern "C" int32_t* index_fault_{i}() {{ return &emu{i}::lm_index_fault; }}\n'

    def _plan(self, cx, tc, dyn_map):
        # Few multiprocessors keep grid-stride kernels to a few blocks (and striding).
        return _core.cuda_launch_plan(cx._g, "sm_90", tc, dyn_map, 1)

    def _fault_flag(self, i: int):
        flag = getattr(self.lib, f"index_fault_{i}")
        flag.restype = ctypes.POINTER(ctypes.c_int32)
        return flag().contents

    def _kernel_args(self, pointers: list, dims: list, fault) -> list:
        """The launch's argument addresses: its buffers', then its dims'."""
        return pointers + [ctypes.addressof(v) for v in dims]

    def run(self, i, feeds: dict, outputs: list) -> list:
        """Runs graph ``i`` with ``feeds`` {input tensor: array}; returns ``outputs``' values."""
        cx, _, _ = self.items[i]
        launches, buffers, dims = self.plans[i]
        arrays = []
        by_node = {t.id: t for t in feeds}
        for role, node, dtype, numel in buffers:
            if role == 0 and node in by_node and lm.dtype.is_quantized(dtype):  # raw blocks
                data = np.ascontiguousarray(feeds[by_node[node]], np.uint8).reshape(-1)
                assert data.size == _core.storage_bytes(dtype, numel)
                arrays.append(data)
            elif role == 0 and node in by_node:
                t = by_node[node]
                data = _to_storage(np.asarray(feeds[t], dtype=np.float32).reshape(-1), dtype)
                assert data.size == numel
                arrays.append(np.ascontiguousarray(data))
            else:
                storage = lm.dtype.storage(dtype)
                fill = np.full(max(numel, 1), 0x7FC0, dtype=np.uint16) if dtype == lm.bfloat16 \
                    else np.full(max(numel, 1), np.nan if dtype != lm.int32 and
                                 dtype != lm.bool_ else 7).astype(storage)
                arrays.append(fill)  # poisoned: every output element must be written
        fault = self._fault_flag(i)
        fault.value = 0
        dim_values = [ctypes.c_int64(v) for v in dims]
        for name, grid, block, buffer_ids, empty in launches:
            if empty:
                continue
            ptrs = [arrays[b].ctypes.data for b in buffer_ids]
            addresses = self._kernel_args(ptrs, dim_values, fault)
            args = (ctypes.c_void_p * len(addresses))(*addresses)
            fn = getattr(self.lib, f"launch_{i}_{name}")
            fn(args, ctypes.c_uint(grid[0]), ctypes.c_uint(grid[1]), ctypes.c_uint(grid[2]),
               ctypes.c_uint(block[0]))
        if fault.value:  # as CudaRuntime.execute raises (runtime.cc throw_index_fault)
            raise lm.ShapeError("emulated: Gather: an index is out of range for its data")
        results = []
        for t in outputs:
            out_node = cx._g.find_output(t.id, t.st)
            for b, (role, node, dtype, numel) in enumerate(buffers):
                if role == 1 and node == out_node:
                    shape = tuple(int(d) for d in t.shape) if all(
                        isinstance(d, int) for d in t.shape) else None
                    value = _from_storage(arrays[b][:numel], dtype).astype(np.float64)
                    results.append(value.reshape(shape) if shape else value)
        return results


class _ProgramTensor:
    """What Emulated.run reads of a tensor: its node in the program's graph."""

    def __init__(self, node, st=None):
        self.id, self.st, self.shape = node, st, (None,)


def run_program(cx, program, feeds, y, workdir, emulator=None):
    """Runs an extracted ``program`` of cx's graph (at cx.dyn_map) in the emulator on ``feeds``
    ({input tensor: torch tensor}); returns output y's value, flat."""
    import types

    from luminal.runtime import _id_map

    ids = _id_map(cx._g, program)
    graph = types.SimpleNamespace(_g=program.graph)
    emu = (emulator or Emulated)([(graph, None, dict(cx.dyn_map))], str(workdir))
    out_node = ids[cx._g.find_output(y.id, y.st)]
    graph._g = types.SimpleNamespace(find_output=lambda node, view: out_node)
    fed = {_ProgramTensor(ids[t.id]): v.numpy() for t, v in feeds.items()}
    (value,) = emu.run(0, fed, [_ProgramTensor(out_node, y.st)])
    return value
