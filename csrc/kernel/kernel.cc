// Printing of LLIR as s-expressions, and the small queries kernels answer about themselves.
#include "kernel/kernel.h"

#include <algorithm>
#include <cstdio>

namespace luminal {

namespace {
const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kLoad: return "load";
    case ValueKind::kConst: return "const";
    case ValueKind::kIndex: return "index";
    case ValueKind::kUnary: return "unary";
    case ValueKind::kBinary: return "binary";
    case ValueKind::kCast: return "cast";
    case ValueKind::kSelect: return "select";
    case ValueKind::kReduce: return "reduce";
    case ValueKind::kCombine: return "combine";
  }
  return "?";
}

std::string value_text(const Value& v) {
  std::string s = std::string("(") + kind_name(v.kind) + " " + dtype_name(v.dtype);
  switch (v.kind) {
    case ValueKind::kLoad:
      s += " b" + std::to_string(v.buffer) + " [" + v.index.to_string() + "]";
      if (v.valid != Expr(1)) s += " (valid " + v.valid.to_string() + ")";
      for (const Bind& b : v.binds) {
        s += " (bind " + b.symbol + " %" + std::to_string(b.value) + " " + b.limit.to_string();
        if (b.checked != Expr(1)) s += " (checked " + b.checked.to_string() + ")";
        s += ")";
      }
      break;
    case ValueKind::kConst: {
      char buf[40];
      std::snprintf(buf, sizeof buf, " %.9g", v.number);
      s += buf;
      break;
    }
    case ValueKind::kIndex:
      s += " [" + v.index.to_string() + "]";
      break;
    case ValueKind::kSelect:
      s += " (valid " + v.valid.to_string() + ")";
      break;
    case ValueKind::kUnary:
    case ValueKind::kBinary:
    case ValueKind::kReduce:
    case ValueKind::kCombine:
      s += std::string(" ") + op_name(v.op);
      break;
    case ValueKind::kCast:
      s += std::string(" from ") + dtype_name(v.operand);
      break;
  }
  for (ValueId a : v.args) s += " %" + std::to_string(a);
  return s + ")";
}
}  // namespace

std::vector<bool> Kernel::cone(ValueId from) const {
  std::vector<bool> in(values.size(), false);
  in[from] = true;
  for (size_t i = static_cast<size_t>(from) + 1; i-- > 0;) {
    if (!in[i]) continue;
    for (ValueId a : values[i].args) {
      if (a >= 0) in[a] = true;
    }
    for (const Bind& b : values[i].binds) {
      if (b.value >= 0) in[b.value] = true;
    }
  }
  return in;
}

bool Kernel::plain_loop_nest() const {
  return !loops.empty() && reduce.empty() && reduce_at < 0 && !matmul.present && !row.present &&
         !attention.present;
}

std::vector<BufferId> Kernel::reads() const {
  std::vector<BufferId> out;
  for (const Value& v : values) {
    if (v.kind == ValueKind::kLoad && v.buffer != this->out) out.push_back(v.buffer);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Kernel::to_string() const {
  std::string s = "(kernel " + name + " (loops";
  for (const Loop& l : loops) s += " (" + l.var + " " + l.extent.to_string() + ")";
  s += ")";
  for (const Loop& l : reduce) s += " (reduce " + l.var + " " + l.extent.to_string() + ")";
  s += "\n";
  for (size_t i = 0; i < values.size(); ++i) {
    s += "  %" + std::to_string(i) + " = " + value_text(values[i]) + "\n";
  }
  s += "  (store b" + std::to_string(out) + " [" + out_index.to_string() + "] %" +
       std::to_string(values.size() - 1) + ")";
  if (matmul.present) s += "\n  (matmul m=" + loops[matmul.m_loop].var + " n=" +
                           loops[matmul.n_loop].var +
                           (matmul.a_q8_0 ? " a=q8_0" : "") +
                           (matmul.a_computed ? " a=computed" : "") +
                           (matmul.b_window ? " b=window" : "") +
                           (matmul.winograd ? " winograd=" + std::to_string(matmul.winograd->tile)
                                            : "") + ")";
  if (row.present) {
    std::string along = row.row_loop >= 0 ? loops[row.row_loop].var : "none";
    s += "\n  (row reductions=" + std::to_string(row.reductions.size()) + " along=" + along + ")";
  }
  if (attention.present) {
    const AttentionInfo& a = attention;
    s += "\n  (attention rows=" + loops[a.query_loop].var + " keys=" +
         reduce[a.key_reduce].var + " max=" + (a.max >= 0 ? "%" + std::to_string(a.max) : "none") +
         " sum=" + (a.sum >= 0 ? "%" + std::to_string(a.sum) : "none") + ")";
  }
  return s + ")";
}

std::string Program::to_string() const {
  std::string s = "(program (dims";
  for (size_t k = 0; k < dims.size(); ++k) s += " (d" + std::to_string(k) + " " + dims[k] + ")";
  s += ")\n";
  const char* roles[] = {"input", "output", "temp"};
  for (const Buffer& b : buffers) {
    s += "  (buffer b" + std::to_string(b.id) + " " + roles[static_cast<int>(b.role)] + " " +
         dtype_name(b.dtype) + " " + b.numel.to_string() + " %" + std::to_string(b.node) + ")\n";
  }
  for (const Kernel& k : kernels) s += k.to_string() + "\n";
  return s + ")";
}

}  // namespace luminal
