// The kernel pattern matchers of kernel/match.h, over the value graph of one kernel.
#include "kernel/match.h"

#include <optional>
#include <string>
#include <utility>

namespace luminal {

namespace {

// A load the matmul kernels read by strides alone: no mask and no run-time symbols.
bool plain_load(const Value& v) {
  return v.kind == ValueKind::kLoad && v.binds.empty() && is_one(v.valid);
}

// An operand of the Mul: a plain load, or a plain load of a 16-bit float widened to f32 by a
// Cast (a bf16 weight read by an f32 matmul: the widening happens inside the kernel).
struct Operand {
  ValueId load = -1;
  bool widened = false;
};

std::optional<Operand> operand_of(const std::vector<Value>& values, ValueId id) {
  const Value& v = values[id];
  if (plain_load(v)) return Operand{id, false};
  if (v.kind != ValueKind::kCast || v.dtype != DType::F32) return std::nullopt;
  if (!is_half(v.operand)) return std::nullopt;
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

}  // namespace

MatmulInfo match_matmul(const Kernel& kernel) {
  const MatmulInfo none;
  const std::vector<Value>& values = kernel.values;
  if (kernel.loops.size() < 2 || kernel.reduce.size() != 1 || values.empty()) return none;
  // The reduction is stored as is: no epilogue after it.
  const ValueId stored = static_cast<ValueId>(values.size()) - 1;
  if (kernel.reduce_at != stored) return none;
  const Value& sum = values[stored];
  if (sum.op != OpKind::SumReduce || !is_float(sum.dtype)) return none;
  ValueId product = sum.args[0];
  const bool product_widened = values[product].kind == ValueKind::kCast;
  if (product_widened) {
    if (values[product].dtype != DType::F32) return none;
    product = values[product].args[0];
  }
  const Value& mul = values[product];
  if (mul.kind != ValueKind::kBinary || mul.op != OpKind::Mul) return none;
  std::optional<Operand> x = operand_of(values, mul.args[0]);
  std::optional<Operand> y = operand_of(values, mul.args[1]);
  if (!x || !y || x->load == y->load) return none;
  if (values[mul.args[0]].dtype != values[mul.args[1]].dtype) return none;
  // Two loads, their widening casts, the product, its cast and the sum are the whole body.
  const size_t body = 4 + (product_widened ? 1 : 0) + (x->widened ? 1 : 0) + (y->widened ? 1 : 0);
  if (values.size() != body) return none;
  MatmulInfo info;
  info.m_loop = static_cast<int>(kernel.loops.size()) - 2;
  info.n_loop = info.m_loop + 1;
  const std::string& m = kernel.loops[info.m_loop].var;
  const std::string& n = kernel.loops[info.n_loop].var;
  const std::string& k = kernel.reduce[0].var;
  std::optional<Strides> sx = strides_of(values[x->load].index, m, n, k);
  std::optional<Strides> sy = strides_of(values[y->load].index, m, n, k);
  if (!sx || !sy) return none;
  // a is the operand that does not move along n, b the one that does not move along m.
  if (!is_zero(sx->n) || !is_zero(sy->m)) {
    std::swap(x, y);
    std::swap(sx, sy);
  }
  if (!is_zero(sx->n) || !is_zero(sy->m)) return none;
  // The output index is affine in m and n too (it is row-major over the loops).
  if (!affine_stride(kernel.out_index, m) || !affine_stride(kernel.out_index, n)) return none;
  info.present = true;
  info.a = x->load;
  info.b = y->load;
  info.dtype = mul.operand;
  info.a_stored = values[x->load].dtype;
  info.b_stored = values[y->load].dtype;
  info.a_widened = x->widened;
  info.b_widened = y->widened;
  info.product_widened = product_widened;
  info.a_m = sx->m;
  info.a_k = sx->k;
  info.b_k = sy->k;
  info.b_n = sy->n;
  return info;
}

}  // namespace luminal
