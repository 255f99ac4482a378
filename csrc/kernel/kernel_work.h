// What a kernel does, counted: loop iterations, arithmetic, bytes read from distinct buffers
// and the loads issued, bytes stored, a matmul's multiply-adds. The raw features the search's
// cost model (python/luminal/search_cost.py) prices with per-machine constants; no prices here.
#pragma once

#include <vector>

#include "kernel/kernel.h"

namespace luminal {

struct KernelWork {
  NodeId root = -1;          // the kernel's HLIR root (Kernel::root, as kernel_times names it)
  double outputs = 0;        // elements stored
  double iterations = 0;     // body iterations: outputs times the reduction steps
  double flops = 0;          // Add/Mul/Mod/LessThan/Cast/reduction steps, per iteration run
  double special = 0;        // unary ops (ops.def's Unary), per iteration run
  double bytes_read = 0;     // distinct bytes of the buffers read (each once)
  double loads = 0;          // loads issued (a broadcast or re-read load counts each time)
  double bytes_written = 0;  // bytes stored
  double matmul_flops = 0;   // 2 m n k when the kernel is matmul-shaped (MatmulInfo), else 0
  double matmul_cycles = 0;  // the runtime's estimate of its matmul kernel under its schedule
                             // (a tiling's register blocking), set by cpu_kernel_work
  bool parallel = false;     // set by the runtime that knows its threading (cpu_kernel_work)
  int team = 1;              // threads the kernel's work is split over (1 where not parallel)
};

// One per kernel of `program`, in execution order, with the graph's symbols bound by `dims`.
std::vector<KernelWork> kernel_work(const Program& program, const DynMap& dims);

}  // namespace luminal
