// Counting a kernel's work (kernel_work.h). A value inside the reduction loop runs once per
// step of it, one outside once per output; a row kernel's values are counted per step of every
// reduction loop (an upper bound: it keeps the sum of its loops, not their nesting).
#include "kernel/kernel_work.h"

#include <algorithm>

#include "kernel/lower.h"

namespace luminal {

namespace {
double product(const std::vector<Loop>& loops, const DynMap& env) {
  double n = 1;
  for (const Loop& l : loops) n *= static_cast<double>(l.extent.eval(env));
  return n;
}

double sum_extents(const std::vector<Loop>& loops, const DynMap& env) {
  double n = 0;
  for (const Loop& l : loops) n += static_cast<double>(l.extent.eval(env));
  return std::max(n, 1.0);
}

double bytes_of(DType dtype, double elements) {
  return elements * static_cast<double>(block_bytes(dtype)) / static_cast<double>(block_values(dtype));
}

bool is_special(OpKind op) {
  return op == OpKind::Exp2 || op == OpKind::Log2 || op == OpKind::Sin || op == OpKind::Sqrt ||
         op == OpKind::Recip;
}
}  // namespace

std::vector<KernelWork> kernel_work(const Program& program, const DynMap& dims) {
  DynMap env;  // the program's renamed dims d<k>
  for (size_t k = 0; k < program.dims.size(); ++k) {
    auto it = dims.find(program.dims[k]);
    env[program_dim(k).to_string()] = it == dims.end() ? 16 : it->second;
  }
  std::vector<KernelWork> out;
  for (const Kernel& k : program.kernels) {
    KernelWork w;
    w.root = k.root;
    w.outputs = product(k.loops, env);
    const double steps = k.reduce.empty() ? 1.0 : sum_extents(k.reduce, env);
    w.iterations = w.outputs * steps;
    for (size_t i = 0; i < k.values.size(); ++i) {
      const Value& v = k.values[i];
      const bool inner = k.row.present || static_cast<int>(i) < k.reduce_at;
      const double runs = inner ? w.iterations : w.outputs;
      switch (v.kind) {
        case ValueKind::kLoad:
          w.loads += runs;
          break;
        case ValueKind::kUnary:
          (is_special(v.op) ? w.special : w.flops) += runs;
          break;
        case ValueKind::kBinary:
        case ValueKind::kCast:
        case ValueKind::kCombine:
        case ValueKind::kSelect:
          w.flops += runs;
          break;
        case ValueKind::kReduce:
          w.flops += w.iterations;
          break;
        default:
          break;
      }
    }
    for (BufferId b : k.reads()) {
      const Buffer& buf = program.buffers[b];
      w.bytes_read += bytes_of(buf.dtype, static_cast<double>(buf.numel.eval(env)));
    }
    const Buffer& stored = program.buffers[k.out];
    w.bytes_written = bytes_of(stored.dtype, w.outputs);
    if (k.matmul.present) w.matmul_flops = 2.0 * w.iterations;
    out.push_back(w);
  }
  return out;
}

}  // namespace luminal
