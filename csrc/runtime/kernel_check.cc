// kernel_check.h: runs a program kernel by kernel, checking each one's output.
#include "runtime/kernel_check.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>

#include "core/errors.h"
#include "runtime/runtime.h"

namespace luminal {

namespace {
// A checksum of `bytes` bytes: four interleaved multiply-xor lanes over 64-bit words, so it
// runs near memory speed (activations are checksummed twice per kernel boundary).
uint64_t checksum(const uint8_t* p, int64_t bytes) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t lane[4] = {1, 2, 3, 4};
  int64_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    for (int j = 0; j < 4; ++j) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * j, 8);
      lane[j] = (lane[j] ^ w) * kMul;
    }
  }
  uint64_t h = lane[0] ^ (lane[1] << 1) ^ (lane[2] << 2) ^ (lane[3] << 3);
  for (; i < bytes; ++i) h = (h ^ p[i]) * kMul;
  return h ^ static_cast<uint64_t>(bytes);
}

// The poison an element of `dtype` is filled with before its kernel runs: a NaN with a payload
// no arithmetic makes (floats), a value no check input leads to (Int), neither 0 nor 1 (Bool).
std::vector<uint8_t> poison(DType dtype) {
  switch (dtype) {
    case DType::F32:
    case DType::Int:
      return {0xAD, 0xDB, 0xBA, 0x7F};
    case DType::BF16:
      return {0xBD, 0x7F};
    case DType::F16:
      return {0xBD, 0x7D};
    case DType::Bool:
      return {0xBD};
    default:
      throw InternalError("check: a kernel stores a quantized buffer");
  }
}

// `count` elements of `bytes` set to the poison: one, then copies doubling in length.
void fill_poison(uint8_t* bytes, int64_t count, const std::vector<uint8_t>& mark) {
  if (count <= 0) return;
  const size_t total = static_cast<size_t>(count) * mark.size();
  std::memcpy(bytes, mark.data(), mark.size());
  for (size_t done = mark.size(); done < total; done *= 2) {
    std::memcpy(bytes + done, bytes, std::min(done, total - done));
  }
}

// `count` elements of `dtype` at `bytes` set to stand-in values: floats +-[0.5, 2) of random
// sign and magnitude from a fixed sequence (the same every check), ints and bools 0 (an index
// in range of any table).
void fill_stand_in(uint8_t* bytes, int64_t count, DType dtype) {
  if (!is_float(dtype)) {
    std::memset(bytes, 0, static_cast<size_t>(storage_bytes(dtype, count)));
    return;
  }
  uint32_t state = 12345;
  for (int64_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    const double magnitude = 0.5 + 1.5 * static_cast<double>(state >> 8) / double(1u << 24);
    const float v = static_cast<float>((state & 1) ? -magnitude : magnitude);
    if (dtype == DType::F32) {
      std::memcpy(bytes + 4 * i, &v, 4);
    } else {
      const uint16_t half = dtype == DType::BF16 ? f32_to_bf16(v) : f32_to_f16(v);
      std::memcpy(bytes + 2 * i, &half, 2);
    }
  }
}

// The first element of `bytes` (count elements of width W) still holding the poison, or -1.
template <typename W>
int64_t first_poisoned_as(const uint8_t* bytes, int64_t count, const std::vector<uint8_t>& mark) {
  W want;
  std::memcpy(&want, mark.data(), sizeof(W));
  for (int64_t i = 0; i < count; ++i) {
    W v;
    std::memcpy(&v, bytes + static_cast<size_t>(i) * sizeof(W), sizeof(W));
    if (v == want) return i;
  }
  return -1;
}

int64_t first_poisoned(const uint8_t* bytes, int64_t count, const std::vector<uint8_t>& mark) {
  switch (mark.size()) {
    case 4:
      return first_poisoned_as<uint32_t>(bytes, count, mark);
    case 2:
      return first_poisoned_as<uint16_t>(bytes, count, mark);
    default:
      return first_poisoned_as<uint8_t>(bytes, count, mark);
  }
}

// Up to `count` distinct elements of a tensor of `shape` (numel elements): its first and last
// (where count >= 2), then coordinates drawn per dim, a quarter of them at a dim's edges (0, 1, the last two, the
// middle, the last whole block of 16), where tails and block boundaries of a kernel's loops
// fall.
std::vector<int64_t> sample_elements(const std::vector<int64_t>& shape, int64_t numel,
                                     int count, std::mt19937_64& rng) {
  std::vector<int64_t> out;
  if (numel == 0 || count <= 0) return out;
  std::set<int64_t> seen;
  auto add = [&](int64_t e) {
    if (seen.insert(e).second) out.push_back(e);
  };
  if (count >= 2) {
    add(0);
    add(numel - 1);
  }
  const int64_t tries = 4LL * count;
  for (int64_t t = 0; t < tries && static_cast<int>(out.size()) < count &&
                      static_cast<int64_t>(out.size()) < numel;
       ++t) {
    int64_t flat = 0;
    for (int64_t d : shape) {
      int64_t c = 0;
      if (d > 1) {
        if (rng() % 4 == 0) {
          const int64_t edges[] = {0, 1, d - 1, d - 2, d / 2, std::max<int64_t>(0, d / 16 * 16 - 1)};
          c = edges[rng() % 6];
        } else {
          c = static_cast<int64_t>(rng() % static_cast<uint64_t>(d));
        }
      }
      flat = flat * d + c;
    }
    add(flat);
  }
  return out;
}

// The interpreter's value of element `e` of kernel k's root; its errors name the kernel.
double sampled_value(native::ElementEval& eval, const Graph& graph, size_t k, NodeId root,
                     int64_t e, const DynMap& dims) {
  try {
    return eval.value(root, e);
  } catch (const ShapeError& err) {
    throw ShapeError("check of kernel " + std::to_string(k) + " (" + node_desc(graph, root, dims) +
                     "): " + err.what());
  } catch (const InternalError& err) {
    throw InternalError("check of kernel " + std::to_string(k) + " (" +
                        node_desc(graph, root, dims) + "): " + err.what());
  }
}

// Node `n` of the program's graph as the node of the graph as written in its class
// (KernelCheckOptions::original_of), or -1.
NodeId original_node(const std::vector<NodeId>& original_of, NodeId n) {
  return n >= 0 && static_cast<size_t>(n) < original_of.size() ? original_of[n] : NodeId{-1};
}

// Gives `eval` the graph's inputs (the check data) and the operands the kernel read (as the
// program left them), each as the node `as` names it in eval's graph (-1: not given; null
// `as`: the program's own nodes); returns the node standing for the kernel's root, or (with
// `as`) -1 where it has none or one of another size, and nothing is given.
NodeId set_kernel_sources(const std::map<NodeId, native::ElementSource>& inputs,
                          KernelSteps& steps, const Kernel& kernel, native::ElementEval& eval,
                          const std::vector<NodeId>* as) {
  auto of = [&](NodeId n) { return as ? original_node(*as, n) : n; };
  const NodeId root = of(kernel.root);
  if (as && (root < 0 || eval.numel(root) != steps.numel(kernel.out))) return -1;
  const Program& program = steps.program();
  eval.clear_sources();
  for (const auto& [node, source] : inputs) {
    if (of(node) >= 0) eval.set_source(of(node), source);
  }
  for (BufferId b : kernel.reads()) {
    const Buffer& buf = program.buffers[b];
    if (buf.role == BufferRole::kInput) continue;  // the interpreter's own data
    if (of(buf.node) < 0 || eval.numel(of(buf.node)) != steps.numel(b)) continue;
    eval.set_source(of(buf.node), {steps.host_bytes(b), buf.dtype, steps.numel(b)});
  }
  return root;
}

// Samples `root` of `eval`'s graph at `elements` into the verdict (want, got from `written`),
// while the steps stay within `budget` (two samples always). The first sample may take at most
// `first_limit` steps (-1: any): past it nothing is sampled and it returns false.
bool take_samples(native::ElementEval& eval, const Graph& graph, size_t k, NodeId root,
                  const std::vector<int64_t>& elements, int64_t budget, int64_t first_limit,
                  const uint8_t* written, DType stored, const DynMap& dims,
                  KernelSamples& verdict) {
  const int64_t start = eval.steps();
  if (first_limit >= 0) eval.set_step_limit(start + first_limit);
  try {
    for (int64_t e : elements) {
      if (verdict.elements.size() >= 2 && eval.steps() - start > budget) break;
      verdict.want.push_back(sampled_value(eval, graph, k, root, e, dims));
      eval.set_step_limit(-1);
      verdict.got.push_back(is_float(stored)
                                ? native::load_f(stored, written, e)
                                : static_cast<double>(native::load_i(stored, written, e)));
      verdict.elements.push_back(e);
    }
  } catch (const native::StepLimitReached&) {
    eval.set_step_limit(-1);
    verdict.want.clear();
    return false;
  }
  return true;
}
}  // namespace

KernelCheckReport check_kernels(const Graph& graph, KernelSteps& steps,
                                const std::map<NodeId, native::ElementSource>& inputs,
                                const DynMap& dims, const KernelCheckOptions& options) {
  const Program& program = steps.program();
  KernelCheckReport report;
  native::ElementEval eval(graph, dims);
  native::ElementEval original_eval(options.original ? *options.original : graph, dims);
  std::map<BufferId, uint64_t> sums;  // a written buffer's checksum, as its kernel left it
  std::map<BufferId, int> writer;     // and the kernel that wrote it
  std::set<std::string> units;        // code checked so far
  auto bytes_of = [&](BufferId b) {
    return storage_bytes(program.buffers[b].dtype, steps.numel(b));
  };
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const Kernel& kernel = program.kernels[k];
    KernelSamples verdict;
    verdict.kernel = static_cast<int>(k);
    verdict.root = kernel.root;
    verdict.dtype = graph.node(kernel.root).dtype;
    for (BufferId b : kernel.reads()) {
      auto sum = sums.find(b);
      if (sum == sums.end() || checksum(steps.host_bytes(b), bytes_of(b)) == sum->second) continue;
      verdict.problem = "its operand " + node_desc(graph, program.buffers[b].node) +
                        " changed after kernel " + std::to_string(writer.at(b)) +
                        " wrote it, before this kernel read it";
    }
    const BufferId out = kernel.out;
    const std::string& unit = steps.unit(static_cast<int>(k));
    if (!options.run_repeats && units.count(unit)) {
      fill_stand_in(steps.host_bytes(out), steps.numel(out), program.buffers[out].dtype);
      steps.commit(out);
      sums[out] = checksum(steps.host_bytes(out), bytes_of(out));
      writer[out] = static_cast<int>(k);
      ++report.skipped;
      report.kernels.push_back(std::move(verdict));
      continue;
    }
    const std::vector<uint8_t> mark = poison(program.buffers[out].dtype);
    const bool first_write = !writer.count(out);
    if (first_write) {
      fill_poison(steps.host_bytes(out), steps.numel(out), mark);
      steps.commit(out);
    }
    const auto started = std::chrono::steady_clock::now();
    steps.run_kernel(static_cast<int>(k));
    report.kernel_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const uint8_t* written = steps.host_bytes(out);
    if (first_write && verdict.problem.empty()) {
      const int64_t unwritten = first_poisoned(written, steps.numel(out), mark);
      if (unwritten >= 0) {
        verdict.problem = "element " + std::to_string(unwritten) + " of its output " +
                          node_desc(graph, kernel.root) + " was never written";
      }
    }
    sums[out] = checksum(written, bytes_of(out));
    writer[out] = static_cast<int>(k);
    // Samples: where the kernel's code is new and its root's class has a node in the graph as
    // written, that node's value from the operands the kernel read and the graph's inputs
    // (which also checks the rewrites that made the kernel's graph); else, or where that
    // formula reaches behind the operands, the kernel's own root's.
    const NodeId class_node =
        options.original ? original_node(options.original_of, kernel.root) : NodeId{-1};
    const std::string key = unit + "@" + std::to_string(class_node);
    report.checked.insert(key);
    // New: code not run before in this program (a model's layers share it), and not passed
    // by an earlier program for this class.
    const bool fresh = units.insert(unit).second && !options.checked.count(key);
    report.distinct += fresh;
    std::mt19937_64 rng(options.seed * 1000003u + k);
    const std::vector<int64_t> elements =
        sample_elements(eval.shape(kernel.root), eval.numel(kernel.root),
                        fresh ? options.samples : options.repeat_samples, rng);
    const DType stored = program.buffers[out].dtype;
    if (options.original && fresh) {  // a repeat of the code runs the same rewrite's output
      const NodeId root =
          set_kernel_sources(inputs, steps, kernel, original_eval, &options.original_of);
      if (root >= 0 && take_samples(original_eval, *options.original, k, root, elements,
                                    options.step_budget, options.original_step_limit,
                                    written, stored, dims, verdict)) {
        verdict.original = root;
        ++report.classes_checked;
      }
    }
    if (verdict.original < 0) {
      set_kernel_sources(inputs, steps, kernel, eval, nullptr);
      take_samples(eval, graph, k, kernel.root, elements, options.step_budget, -1, written,
                   stored, dims, verdict);
    }
    report.kernels.push_back(std::move(verdict));
    if (options.stop_after_seconds > 0 && report.kernel_seconds > options.stop_after_seconds &&
        k + 1 < program.kernels.size()) {
      report.stopped = true;
      break;
    }
  }
  report.steps = eval.steps() + original_eval.steps();
  return report;
}

}  // namespace luminal
