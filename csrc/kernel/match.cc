// The kernel pattern matchers of kernel/match.h, over the value graph of one kernel.
#include "kernel/match.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "kernel/window.h"
#include "kernel/winograd.h"

namespace luminal {

namespace {

// A load the matmul kernels read by strides alone: no mask and no run-time symbols.
bool plain_load(const Value& v) {
  return v.kind == ValueKind::kLoad && v.binds.empty() && is_one(v.valid);
}

// An operand of the Mul: a plain load, or a plain load of narrow storage (a 16-bit float or
// quantized blocks) widened to f32 by a Cast (a bf16 or Q4_K weight read by an f32 matmul:
// the widening happens inside the kernel).
struct Operand {
  ValueId load = -1;
  bool widened = false;
};

std::optional<Operand> operand_of(const std::vector<Value>& values, ValueId id) {
  const Value& v = values[id];
  if (plain_load(v)) return Operand{id, false};
  if (v.kind != ValueKind::kCast || v.dtype != DType::F32) return std::nullopt;
  if (!is_narrow_storage(v.operand)) return std::nullopt;
  if (!plain_load(values[v.args[0]])) return std::nullopt;
  return Operand{v.args[0], true};
}

// Element strides of an index along the m, n and k loops.
struct Strides {
  Expr m, n, k;
};

std::optional<Strides> strides_of(const Expr& index, const std::string& m, const std::string& n,
                                  const std::string& k) {
  std::optional<Expr> along_m = affine_stride(index, m);
  std::optional<Expr> along_n = affine_stride(index, n);
  std::optional<Expr> along_k = affine_stride(index, k);
  if (!along_m || !along_n || !along_k) return std::nullopt;
  return Strides{*along_m, *along_n, *along_k};
}

// Whether the values after the kernel's reduction are elementwise work on its result: no
// reduction among them, and none reads a value of the reduction loop but the sum itself (the
// epilogue runs where only the sum is left, kernel/epilogue.h).
bool elementwise_epilogue(const Kernel& kernel) {
  const std::vector<Value>& values = kernel.values;
  for (size_t i = static_cast<size_t>(kernel.reduce_at) + 1; i < values.size(); ++i) {
    const Value& v = values[i];
    if (v.kind == ValueKind::kReduce) return false;
    for (ValueId a : v.args) {
      if (a < kernel.reduce_at) return false;
    }
    for (const Bind& b : v.binds) {
      if (b.value < kernel.reduce_at) return false;
    }
  }
  return true;
}

// The scopes of a computed a (MatmulInfo::a_computed) in `info`: every value of a's cone depends
// on one reduction loop at most and never on n; its reductions are float and of its row; a
// runs in the k loop; and the matmul's loop runs nothing but a's elements, b (`b_values`: its
// load and widening), the product and the sum. False where the kernel is not so.
bool scope_computed_a(const Kernel& kernel, ValueId a, size_t b_values, MatmulInfo& info) {
  const std::vector<Value>& values = kernel.values;
  const int last = static_cast<int>(kernel.reduce.size()) - 1;  // the matmul's k loop
  std::map<std::string, int> inner_var;
  for (size_t j = 0; j < kernel.reduce.size(); ++j) inner_var[kernel.reduce[j].var] = int(j);
  const std::string& n = kernel.loops[info.n_loop].var;
  std::vector<std::set<int>> inner(values.size());
  std::vector<bool> along_n(values.size(), false);
  auto add_symbols = [&](const Expr& e, size_t i) {
    for (const std::string& sym : e.symbols()) {
      if (auto it = inner_var.find(sym); it != inner_var.end()) inner[i].insert(it->second);
      along_n[i] = along_n[i] || sym == n;
    }
  };
  std::vector<bool> in_a = kernel.cone(a);
  int stage = 0;  // kReduce values run their loops in order (Kernel::reduce)
  info.a_scope.assign(values.size(), MatmulInfo::kNotA);
  for (size_t i = 0; i <= static_cast<size_t>(kernel.reduce_at); ++i) {
    const Value& v = values[i];
    for (ValueId x : v.args) {
      inner[i].insert(inner[x].begin(), inner[x].end());
      along_n[i] = along_n[i] || along_n[x];
    }
    for (const Bind& b : v.binds) {
      inner[i].insert(inner[b.value].begin(), inner[b.value].end());
      along_n[i] = along_n[i] || along_n[b.value];
    }
    if (v.kind == ValueKind::kLoad || v.kind == ValueKind::kIndex) add_symbols(v.index, i);
    if (v.kind == ValueKind::kLoad || v.kind == ValueKind::kSelect) add_symbols(v.valid, i);
    if (v.kind == ValueKind::kReduce) {
      if (!inner[i].erase(stage++)) return false;
      if (i != static_cast<size_t>(kernel.reduce_at)) {
        if (!in_a[i] || v.dtype != DType::F32) return false;
        info.a_rows.push_back(static_cast<ValueId>(i));
      }
    }
    if (!in_a[i]) continue;
    if (inner[i].size() > 1 || along_n[i]) return false;
    if (inner[i].empty()) {
      info.a_scope[i] = MatmulInfo::kRowScope;
    } else {
      const int loop = *inner[i].begin();
      info.a_scope[i] = loop == last ? MatmulInfo::kElement : loop;
    }
  }
  if (stage != last + 1 || info.a_scope[a] != MatmulInfo::kElement) return false;
  // The sum's cone: a's, then b's values, the product and the sum.
  std::vector<bool> in_sum = kernel.cone(kernel.reduce_at);
  size_t outside_a = 0;
  for (size_t i = 0; i < values.size(); ++i) outside_a += in_sum[i] && !in_a[i];
  return outside_a == b_values + 2;
}

// A load of a Gather's data at index arithmetic of the loops (kernel/window.h): no run-time
// symbol, and neither its index nor its mask moves along m.
bool window_load(const Value& v, const std::string& m) {
  if (v.kind != ValueKind::kLoad || !v.binds.empty() || v.dtype != DType::F32) return false;
  for (const Expr* e : {&v.index, &v.valid}) {
    for (const std::string& s : e->symbols()) {
      if (s == m) return false;
    }
  }
  return true;
}

// The matmul of a kernel scheduled window: a plain load a (not moving along n) times a window
// load b, summed, the whole body of its one reduction loop (but the Gather's index arithmetic,
// which its load's index Expr replaces: values no other reads).
bool match_window(const Kernel& kernel, const Value& mul, MatmulInfo& info) {
  const std::vector<Value>& values = kernel.values;
  const std::string& m = kernel.loops[info.m_loop].var;
  const std::string& n = kernel.loops[info.n_loop].var;
  const std::string& k = kernel.reduce.back().var;
  if (kernel.reduce.size() != 1) return false;
  const std::vector<bool> in_sum = kernel.cone(kernel.reduce_at);
  for (ValueId i = 0; i < kernel.reduce_at; ++i) {
    if (!in_sum[i] && values[i].dtype != DType::Int) return false;
  }
  if (std::count(in_sum.begin(), in_sum.end(), true) != 4) return false;
  for (int order = 0; order < 2; ++order) {
    const ValueId a = mul.args[order], b = mul.args[1 - order];
    if (!plain_load(values[a]) || values[a].dtype != DType::F32) continue;
    if (!window_load(values[b], m)) continue;
    if (!window_parts(values[b].index, values[b].valid, n, k)) continue;
    if (plain_load(values[b]) && strides_of(values[b].index, m, n, k)) continue;  // no gather
    std::optional<Strides> sa = strides_of(values[a].index, m, n, k);
    if (!sa || !is_zero(sa->n)) continue;
    info.a = a;
    info.b = b;
    info.a_m = sa->m;
    info.a_k = sa->k;
    info.b_k = 0;
    info.b_n = 0;
    info.b_window = true;
    return true;
  }
  return false;
}

}  // namespace

MatmulInfo match_matmul(const Kernel& kernel) {
  const MatmulInfo none;
  const std::vector<Value>& values = kernel.values;
  if (kernel.loops.size() < 2 || kernel.reduce.empty() || values.empty()) return none;
  if (kernel.reduce_at < 0 || !elementwise_epilogue(kernel)) return none;
  const Value& sum = values[kernel.reduce_at];
  if (sum.op != OpKind::SumReduce || !is_float(sum.dtype)) return none;
  ValueId product = sum.args[0];
  const bool product_widened = values[product].kind == ValueKind::kCast;
  if (product_widened) {
    if (values[product].dtype != DType::F32) return none;
    product = values[product].args[0];
  }
  const Value& mul = values[product];
  if (mul.kind != ValueKind::kBinary || mul.op != OpKind::Mul) return none;
  MatmulInfo info;
  info.m_loop = static_cast<int>(kernel.loops.size()) - 2;
  info.n_loop = info.m_loop + 1;
  if (schedule_param(kernel.schedule, kWindowParam) == std::optional<int64_t>(1) &&
      !product_widened && affine_stride(kernel.out_index, kernel.loops[info.m_loop].var) &&
      affine_stride(kernel.out_index, kernel.loops[info.n_loop].var) &&
      match_window(kernel, mul, info)) {
    info.present = true;
    info.dtype = DType::F32;
    if (static_cast<size_t>(kernel.reduce_at) + 1 < values.size()) {
      info.epilogue_from = kernel.reduce_at + 1;
    }
    const std::optional<int64_t> tile = winograd_tile(kernel.schedule);
    if (tile && info.epilogue_from < 0) {
      info.winograd = winograd_conv(kernel, info);
      if (info.winograd) info.winograd->tile = *tile;
    }
    return info;
  }
  std::optional<Operand> x = operand_of(values, mul.args[0]);
  std::optional<Operand> y = operand_of(values, mul.args[1]);
  if (values[mul.args[0]].dtype != values[mul.args[1]].dtype) return none;
  const std::string& m = kernel.loops[info.m_loop].var;
  const std::string& n = kernel.loops[info.n_loop].var;
  const std::string& k = kernel.reduce.back().var;
  // The output index is affine in m and n too (it is row-major over the loops).
  if (!affine_stride(kernel.out_index, m) || !affine_stride(kernel.out_index, n)) return none;
  std::optional<Strides> sy = y ? strides_of(values[y->load].index, m, n, k) : std::nullopt;
  if (x && y) {
    if (x->load == y->load || kernel.reduce.size() != 1) return none;
    // Two loads, their widening casts, the product, its cast and the sum are the whole body
    // of the reduction loop.
    const size_t body = 4 + (product_widened ? 1 : 0) + (x->widened ? 1 : 0) +
                        (y->widened ? 1 : 0);
    if (static_cast<size_t>(kernel.reduce_at) + 1 != body) return none;
    std::optional<Strides> sx = strides_of(values[x->load].index, m, n, k);
    if (!sx || !sy) return none;
    // a is the operand that does not move along n, b the one that does not move along m.
    if (!is_zero(sx->n) || !is_zero(sy->m)) {
      std::swap(x, y);
      std::swap(sx, sy);
    }
    if (!is_zero(sx->n) || !is_zero(sy->m)) return none;
    info.a = x->load;
    info.a_stored = values[x->load].dtype;
    info.a_widened = x->widened;
    info.a_m = sx->m;
    info.a_k = sx->k;
  } else {
    // a computed in the kernel (kernel/prologue.h), b the load that does not move along m
    ValueId a = mul.args[0];
    if (x) {
      std::swap(x, y);
      a = mul.args[1];
      sy = strides_of(values[y->load].index, m, n, k);
    }
    if (!y || !sy || !is_zero(sy->m) || product_widened) return none;
    info.a = a;
    info.a_computed = true;
    info.a_m = 0;
    info.a_k = 0;
    if (!scope_computed_a(kernel, a, y->widened ? 2 : 1, info)) return none;
  }
  info.present = true;
  info.b = y->load;
  info.dtype = mul.operand;
  info.b_stored = values[y->load].dtype;
  info.b_widened = y->widened;
  info.product_widened = product_widened;
  info.b_k = sy->k;
  info.b_n = sy->n;
  if (static_cast<size_t>(kernel.reduce_at) + 1 < values.size()) {
    info.epilogue_from = kernel.reduce_at + 1;
  }
  return info;
}

}  // namespace luminal
