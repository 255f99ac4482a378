// Counting a kernel's work (kernel_work.h). A value inside the reduction loop runs once per
// step of it, one outside once per output; in a row kernel (kernel/row_kernel.h), a value runs
// once per row, per step of its reduction loop, or per element of the row loop, by its scope.
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
  const double per_block = static_cast<double>(block_values(dtype));
  return elements * static_cast<double>(block_bytes(dtype)) / per_block;
}

// A row kernel's reduction value `v`: one step per row per element of its own loop.
double reduce_steps(const Kernel& k, ValueId v, double rows, const DynMap& env) {
  for (size_t j = 0; j < k.row.reductions.size() && j < k.reduce.size(); ++j) {
    if (k.row.reductions[j] == v) return rows * static_cast<double>(k.reduce[j].extent.eval(env));
  }
  return rows;
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
    // A row kernel: its reductions and its row loop each run once per row.
    double rows = w.outputs;
    double row_extent = 1;
    if (k.row.present && k.row.row_loop >= 0) {
      row_extent = static_cast<double>(k.loops[k.row.row_loop].extent.eval(env));
      rows = w.outputs / std::max(row_extent, 1.0);
    }
    if (k.row.present) w.iterations = rows * (steps + row_extent);
    auto runs_of = [&](size_t i) {
      if (!k.row.present) return static_cast<int>(i) < k.reduce_at ? w.iterations : w.outputs;
      const int scope = i < k.row.scope.size() ? k.row.scope[i] : RowInfo::kRowScope;
      if (scope == RowInfo::kRowScope) return rows;
      if (scope < static_cast<int>(k.reduce.size())) {
        return rows * static_cast<double>(k.reduce[scope].extent.eval(env));
      }
      return rows * row_extent;
    };
    for (size_t i = 0; i < k.values.size(); ++i) {
      const Value& v = k.values[i];
      const double runs = runs_of(i);
      switch (v.kind) {
        case ValueKind::kLoad:
          w.loads += runs;
          break;
        case ValueKind::kUnary:
          w.special += runs;  // every unary op is a libm call or a division
          break;
        case ValueKind::kBinary:
        case ValueKind::kCast:
        case ValueKind::kCombine:
        case ValueKind::kSelect:
          w.flops += runs;
          break;
        case ValueKind::kReduce:
          w.flops += k.row.present ? reduce_steps(k, static_cast<ValueId>(i), rows, env)
                                   : w.iterations;
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
