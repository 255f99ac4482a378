// The shared part of every C-like renderer: the op -> text table (literals, binary ops,
// reductions), helpers, scalar bodies, loads/stores with dtype conversions, generic loop nests
// with an optional reduction loop. Text only.
#include "codegen/c_like.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "codegen/c/quant.h"
#include "core/errors.h"

namespace luminal {

namespace {

// Whether value `id` of `k` is an f32 Cast of a 0/1 value: a Bool, or an index expression
// whose every value lies in [0, 1] (a comparison of loop indices: a causal mask).
bool zero_or_one(const Kernel& k, ValueId id) {
  const Value& cast = k.values[id];
  if (cast.kind != ValueKind::kCast || cast.dtype != DType::F32) return false;
  const Value& x = k.values[cast.args[0]];
  if (x.dtype == DType::Bool) return true;
  if (x.kind != ValueKind::kIndex || x.dtype != DType::Int) return false;
  auto [lo, hi] = value_range(x.index);
  return lo >= 0 && hi <= 1;
}

}  // namespace

void CodeWriter::line(const std::string& text) {
  out_ += std::string(static_cast<size_t>(2 * depth_), ' ') + text + "\n";
}

void CodeWriter::open(const std::string& text) {
  line(text.empty() ? "{" : text + " {");
  ++depth_;
}

void CodeWriter::middle(const std::string& text) {
  --depth_;
  line(text);
  ++depth_;
}

void CodeWriter::close(const std::string& text) {
  --depth_;
  line(text);
}

std::string CLikeRenderer::buffer_name(BufferId id) { return "b" + std::to_string(id); }
std::string CLikeRenderer::dim_name(size_t k) { return "d" + std::to_string(k); }
std::string CLikeRenderer::value_name(ValueId id) { return "v" + std::to_string(id); }

std::string CLikeRenderer::float_literal(double v) {
  if (std::isnan(v)) return "(0.0f / 0.0f)";
  if (std::isinf(v)) return v > 0 ? "(1.0f / 0.0f)" : "(-1.0f / 0.0f)";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return (v < 0 ? "(" + s + "f)" : s + "f");
}

std::string CLikeRenderer::int_literal(int64_t v) {
  if (v == -2147483648LL) return "(-2147483647 - 1)";
  return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
}

std::string CLikeRenderer::zero_of(DType dtype) { return is_float(dtype) ? "0.0f" : "0"; }

std::string CLikeRenderer::round_to(DType dtype, const std::string& x) {
  if (dtype == DType::F16) return "lm_f16_to_f32(lm_f32_to_f16(" + x + "))";
  if (dtype == DType::BF16) return "lm_bf16_to_f32(lm_f32_to_bf16(" + x + "))";
  return x;
}

std::string CLikeRenderer::reduce_init(const Value& v) const {
  if (v.op == OpKind::SumReduce) return zero_of(v.dtype);
  if (is_float(v.dtype)) return "(-1.0f / 0.0f)";
  if (v.dtype == DType::Bool) return "0";
  return "(-2147483647 - 1)";
}

std::string CLikeRenderer::reduce_combine(const Value& v, const std::string& acc,
                                          const std::string& x) const {
  if (v.op == OpKind::SumReduce) {
    if (is_float(v.dtype)) return acc + " + " + x;
    return "(int32_t)((uint32_t)" + acc + " + (uint32_t)" + x + ")";
  }
  if (is_float(v.dtype)) return "lm_fmax_nan(" + acc + ", " + x + ")";
  return "(" + x + " > " + acc + " ? " + x + " : " + acc + ")";
}

std::string CLikeRenderer::binary_expr(const Value& v, const std::string& a,
                                       const std::string& b) const {
  if (v.op == OpKind::LessThan) return op_c_float(v.op, a, b);  // every dtype alike
  if (is_float(v.operand)) return round_to(v.dtype, op_c_float(v.op, a, b));
  if (v.operand == DType::Bool) {
    if (v.op == OpKind::Add) return a + " | " + b;
    if (v.op == OpKind::Mul) return a + " & " + b;
  }
  if (v.op == OpKind::Add) return "(int32_t)((uint32_t)" + a + " + (uint32_t)" + b + ")";
  if (v.op == OpKind::Mul) return "(int32_t)((uint32_t)" + a + " * (uint32_t)" + b + ")";
  return "lm_imod(" + a + ", " + b + ")";
}

std::string CLikeRenderer::type_prelude() const {
  return "typedef long long int64_t;\n"
         "typedef int int32_t;\n"
         "typedef unsigned int uint32_t;\n"
         "typedef unsigned short uint16_t;\n"
         "typedef unsigned char uint8_t;\n";
}

std::string CLikeRenderer::bit_cast_helpers() const {
  std::string q = helper_qualifiers() + " ";
  return q + "uint32_t lm_bits(float f) {\n"
             "  union { float f; uint32_t u; } c;\n"
             "  c.f = f;\n"
             "  return c.u;\n"
             "}\n" +
         q + "float lm_float(uint32_t u) {\n"
             "  union { float f; uint32_t u; } c;\n"
             "  c.u = u;\n"
             "  return c.f;\n"
             "}\n";
}

bool reads_bound_indices(const Program& program) {
  for (const Kernel& k : program.kernels) {
    for (const Value& v : k.values) {
      if (!v.binds.empty()) return true;
    }
  }
  return false;
}

std::string CLikeRenderer::index_fault_declaration() const {
  return "extern int32_t " + std::string(kIndexFault) + ";\n";
}

std::string CLikeRenderer::index_fault(const std::string& zero) const {
  return "(__atomic_store_n(&" + std::string(kIndexFault) + ", 1, __ATOMIC_RELAXED), " + zero +
         ")";
}

std::string CLikeRenderer::prelude(const Program& program) const {
  std::string q = helper_qualifiers() + " ";
  std::string s = type_prelude();
  if (reads_bound_indices(program)) s += index_fault_declaration();
  s += "\n";
  s += q + "int64_t lm_floordiv(int64_t a, int64_t b) {\n"
           "  if (b == 0) return 0;\n"
           "  int64_t q = a / b;\n"
           "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
           "}\n";
  s += q + "int64_t lm_floormod(int64_t a, int64_t b) {\n"
           "  if (b == 0) return 0;\n"
           "  int64_t r = a % b;\n"
           "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
           "}\n";
  s += bit_cast_helpers();
  s += q + "float lm_f16_to_f32(uint16_t h) {\n"
           "  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;\n"
           "  uint32_t e = (h >> 10) & 0x1fu;\n"
           "  uint32_t m = h & 0x3ffu;\n"
           "  if (e == 0) {\n"
           "    float v = (float)m * (1.0f / 16777216.0f);\n"
           "    return sign ? -v : v;\n"
           "  }\n"
           "  if (e == 31) return lm_float(sign | 0x7f800000u | (m << 13));\n"
           "  return lm_float(sign | ((e + 112u) << 23) | (m << 13));\n"
           "}\n";
  s += q + "uint16_t lm_f32_to_f16(float f) {\n"
           "  uint32_t bits = lm_bits(f);\n"
           "  uint32_t sign = (bits >> 16) & 0x8000u;\n"
           "  uint32_t a = bits & 0x7fffffffu;\n"
           "  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);\n"
           "  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);\n"
           "  if (a < 0x38800000u) {\n"
           "    float magic = lm_float(a) + 0.5f;\n"
           "    return (uint16_t)(sign | (lm_bits(magic) - lm_bits(0.5f)));\n"
           "  }\n"
           "  a += 0xc8000fffu + ((a >> 13) & 1u);\n"
           "  return (uint16_t)(sign | (a >> 13));\n"
           "}\n";
  s += q + "float lm_bf16_to_f32(uint16_t h) { return lm_float((uint32_t)h << 16); }\n";
  s += q + "uint16_t lm_f32_to_bf16(float f) {\n"
           "  uint32_t bits = lm_bits(f);\n"
           "  if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40u);\n"
           "  return (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);\n"
           "}\n";
  s += "/* float -> int truncates toward zero, saturates, and maps NaN to 0. */\n";
  s += q + "int32_t lm_f2i(float x) {\n"
           "  if (x != x) return 0;\n"
           "  if (x >= 2147483647.0f) return 2147483647;\n"
           "  if (x <= -2147483648.0f) return -2147483647 - 1;\n"
           "  return (int32_t)x;\n"
           "}\n";
  s += "/* Truncated remainder; x % 0 is 0 (and x % -1 is 0, avoiding INT_MIN % -1). */\n";
  s += q + "int32_t lm_imod(int32_t a, int32_t b) {\n"
           "  return (b == 0 || b == -1) ? 0 : a % b;\n"
           "}\n";
  s += "/* max that propagates NaN: once NaN, always NaN. */\n";
  s += q + "float lm_fmax_nan(float acc, float x) {\n"
           "  return acc != acc ? acc : ((x != x || x > acc) ? x : acc);\n"
           "}\n";
  return s + quant_readers(program, helper_qualifiers(), weight_bytes());
}

std::string CLikeRenderer::storage_type(DType dtype) const {
  switch (dtype) {
    case DType::F32: return "float";
    case DType::F16:
    case DType::BF16: return "uint16_t";
    case DType::Int: return "int32_t";
    case DType::Bool: return "uint8_t";
    default: return "uint8_t";  // quantized blocks: raw bytes (codegen/c/quant.h)
  }
}

std::string CLikeRenderer::compute_type(DType dtype) const {
  return is_float(dtype) || is_quantized(dtype) ? "float" : "int32_t";
}

std::string CLikeRenderer::math_call(OpKind op, const std::string& x) const {
  if (!is_unary(op)) {
    throw InternalError(std::string("math_call: not a unary op: ") + op_name(op));
  }
  return op_c_float(op, x);
}

int CLikeRenderer::reduce_lanes(const Kernel& kernel) const {
  (void)kernel;
  return 1;
}

std::string CLikeRenderer::load_expr(DType dtype, const std::string& buffer,
                                     const std::string& index) const {
  if (is_quantized(dtype)) return quant_load(dtype, buffer, index, weight_bytes());
  return to_compute(dtype, buffer + "[" + index + "]");
}

std::string CLikeRenderer::to_compute(DType dtype, const std::string& raw) const {
  switch (dtype) {
    case DType::F16: return "lm_f16_to_f32(" + raw + ")";
    case DType::BF16: return "lm_bf16_to_f32(" + raw + ")";
    case DType::Bool: return "(int32_t)(" + raw + " != 0)";
    default: return raw;
  }
}

std::string CLikeRenderer::store_expr(DType dtype, const std::string& x) const {
  switch (dtype) {
    case DType::F16: return "lm_f32_to_f16(" + x + ")";
    case DType::BF16: return "lm_f32_to_bf16(" + x + ")";
    case DType::Bool: return "(uint8_t)(" + x + " != 0)";
    default: return x;
  }
}

std::string CLikeRenderer::value_expr(const Kernel& kernel, ValueId id) const {
  const Value& v = kernel.values[id];
  auto arg = [&](size_t k) { return value_name(v.args[k]); };
  switch (v.kind) {
    case ValueKind::kLoad: {
      std::string load = load_expr(v.dtype, buffer_name(v.buffer), v.index.to_c());
      if (!is_one(v.valid)) load = "(" + v.valid.to_c() + ") ? " + load + " : " + zero_of(v.dtype);
      if (v.binds.empty()) return load;
      // A bound index out of range reads 0, and where it is checked raises the index fault.
      std::string in_range;
      std::string checked;
      for (const Bind& b : v.binds) {
        in_range += std::string(in_range.empty() ? "" : " && ") + "(" + b.symbol + " >= 0 && " +
                    b.symbol + " < " + b.limit.to_c() + ")";
        if (!is_one(b.checked)) checked += (checked.empty() ? "" : " || ") + b.checked.to_c();
      }
      std::string fault = index_fault(zero_of(v.dtype));
      if (!checked.empty()) fault = "(" + checked + ") ? " + fault + " : " + zero_of(v.dtype);
      return "(" + in_range + ") ? (" + load + ") : (" + fault + ")";
    }
    case ValueKind::kConst:
      if (is_float(v.dtype)) return float_literal(v.number);
      return int_literal(static_cast<int64_t>(v.number));
    case ValueKind::kIndex: {
      std::string e = v.index.to_c();
      if (is_float(v.dtype)) return round_to(v.dtype, "(float)" + e);
      if (v.dtype == DType::Bool) return "(int32_t)(" + e + " != 0)";
      return "(int32_t)(uint32_t)" + e;
    }
    case ValueKind::kUnary:
      if (v.op == OpKind::Log2 && v.dtype == DType::F32 && zero_or_one(kernel, v.args[0])) {
        // log2 of a 0/1 value (a mask, as masks.neg_inf_where_false builds it): no call, so
        // a loop over it vectorizes
        return "(" + arg(0) + " != 0.0f ? 0.0f : (-1.0f / 0.0f))";
      }
      return round_to(v.dtype, math_call(v.op, arg(0)));
    case ValueKind::kBinary:
      return binary_expr(v, arg(0), arg(1));
    case ValueKind::kCast: {
      if (is_float(v.operand) || is_quantized(v.operand)) {  // quantized: loaded as a float
        if (is_float(v.dtype)) return round_to(v.dtype, arg(0));
        if (v.dtype == DType::Bool) return "(int32_t)(" + arg(0) + " != 0.0f)";
        return "lm_f2i(" + arg(0) + ")";
      }
      // Via double (exact for int32): GCC would fold (float)(int)f into truncf(f), which
      // keeps the sign of a negative fraction's zero (-0.0) where the int cast gives +0.
      if (is_float(v.dtype)) return round_to(v.dtype, int_to_float(arg(0)));
      if (v.dtype == DType::Bool) return "(int32_t)(" + arg(0) + " != 0)";
      return arg(0);
    }
    case ValueKind::kSelect:
      return "(" + v.valid.to_c() + ") ? " + arg(0) + " : " + zero_of(v.dtype);
    case ValueKind::kCombine:
      return reduce_combine(v, arg(0), arg(1));
    case ValueKind::kReduce:
      break;
  }
  throw InternalError("value_expr: a reduction has no expression in " + kernel.to_string());
}

void CLikeRenderer::emit_values(const Kernel& kernel, int begin, int end, CodeWriter& w) const {
  std::set<std::string> bound;
  for (int i = begin; i < end; ++i) emit_value(kernel, i, bound, w);
}

void CLikeRenderer::emit_value(const Kernel& kernel, ValueId id, std::set<std::string>& bound,
                               CodeWriter& w) const {
  const Value& v = kernel.values[id];
  for (const Bind& b : v.binds) {
    if (!bound.insert(b.symbol).second) continue;
    w.line("const int64_t " + b.symbol + " = (int64_t)" + value_name(b.value) + ";");
  }
  w.line(compute_type(v.dtype) + " " + value_name(id) + " = " + value_expr(kernel, id) + ";");
}

std::string CLikeRenderer::store_statement(const Kernel& kernel) const {
  ValueId last = static_cast<ValueId>(kernel.values.size()) - 1;
  return buffer_name(kernel.out) + "[" + kernel.out_index.to_c() + "] = " +
         store_expr(kernel.values[last].dtype, value_name(last)) + ";";
}

void CLikeRenderer::emit_epilogue(const Kernel& kernel, const std::string& acc,
                                  CodeWriter& w) const {
  const Value& sum = kernel.values[kernel.reduce_at];
  w.line(compute_type(sum.dtype) + " " + value_name(kernel.reduce_at) + " = " +
         round_to(sum.dtype, acc) + ";");
  emit_values(kernel, kernel.reduce_at + 1, static_cast<int>(kernel.values.size()), w);
}

void CLikeRenderer::emit_sum_store(const Kernel& kernel, const std::string& acc,
                                   CodeWriter& w) const {
  if (kernel.matmul.epilogue_from < 0) {
    w.line(buffer_name(kernel.out) + "[" + kernel.out_index.to_c() + "] = " +
           store_expr(kernel.values[kernel.reduce_at].dtype, acc) + ";");
    return;
  }
  emit_epilogue(kernel, acc, w);
  w.line(store_statement(kernel));
}

void CLikeRenderer::emit_reduction_loop(const Kernel& kernel, ValueId reduce, const Loop& loop,
                                        int lanes, const std::vector<ValueId>& body,
                                        CodeWriter& w, const std::string& also,
                                        const std::string& per_block) const {
  const Value& red = kernel.values[reduce];
  std::string t = compute_type(red.dtype);
  std::string acc = value_name(reduce);
  std::string x = value_name(red.args[0]);
  std::string extent = loop.extent.to_c();
  auto emit_body_values = [&] {
    std::set<std::string> bound;
    for (ValueId i : body) emit_value(kernel, i, bound, w);
    if (!also.empty()) w.line(also);
  };
  w.line(t + " " + acc + " = " + reduce_init(red) + ";");
  std::string tail_start = "0";
  if (lanes > 1) {
    std::string l = std::to_string(lanes);
    w.line(t + " " + acc + "_p[" + l + "];");
    w.line("for (int lm_u = 0; lm_u < " + l + "; lm_u++) " + acc + "_p[lm_u] = " + acc + ";");
    w.line("const int64_t " + loop.var + "_main = " + extent + " / " + l + " * " + l + ";");
    w.open("for (int64_t " + loop.var + "_b = 0; " + loop.var + "_b < " + loop.var +
           "_main; " + loop.var + "_b += " + l + ")");
    if (!per_block.empty()) w.line(per_block);
    // The lanes are independent; GCC does not vectorize the NaN-propagating select of a
    // float max on its own (a sum it does), so say so.
    if (red.op == OpKind::MaxReduce && is_float(red.dtype)) w.line("#pragma omp simd");
    w.open("for (int lm_u = 0; lm_u < " + l + "; lm_u++)");
    w.line("const int64_t " + loop.var + " = " + loop.var + "_b + lm_u;");
    emit_body_values();
    w.line(acc + "_p[lm_u] = " + reduce_combine(red, acc + "_p[lm_u]", x) + ";");
    w.close();
    w.close();
    w.line("for (int lm_u = 0; lm_u < " + l + "; lm_u++) " + acc + " = " +
           reduce_combine(red, acc, acc + "_p[lm_u]") + ";");
    tail_start = loop.var + "_main";
  }
  w.open("for (int64_t " + loop.var + " = " + tail_start + "; " + loop.var + " < " + extent +
         "; " + loop.var + "++)");
  emit_body_values();
  w.line(acc + " = " + reduce_combine(red, acc, x) + ";");
  w.close();
  if (red.dtype == DType::F16 || red.dtype == DType::BF16) {
    w.line(acc + " = " + round_to(red.dtype, acc) + ";");
  }
}

void CLikeRenderer::emit_body(const Kernel& kernel, CodeWriter& w) const {
  int n = static_cast<int>(kernel.values.size());
  int start = 0;
  if (kernel.reduce_at >= 0) {
    std::vector<ValueId> body;
    for (ValueId i = 0; i < kernel.reduce_at; ++i) body.push_back(i);
    emit_reduction_loop(kernel, kernel.reduce_at, kernel.reduce[0], reduce_lanes(kernel), body,
                        w);
    start = kernel.reduce_at + 1;
  }
  emit_values(kernel, start, n, w);
  w.line(store_statement(kernel));
}

std::vector<std::string> CLikeRenderer::kernel_params(const Program& program,
                                                      const Kernel& kernel) const {
  std::vector<std::string> out;
  const Buffer& ob = program.buffers[kernel.out];
  out.push_back(storage_type(ob.dtype) + "* " + restrict_keyword() + " " + buffer_name(ob.id));
  for (BufferId b : kernel.reads()) {
    out.push_back("const " + storage_type(program.buffers[b].dtype) + "* " + restrict_keyword() +
                  " " + buffer_name(b));
  }
  for (size_t k = 0; k < program.dims.size(); ++k) out.push_back("int64_t " + dim_name(k));
  return out;
}

std::vector<std::string> CLikeRenderer::kernel_args(const Program& program, const Kernel& kernel,
                                                    const std::string& buffers) const {
  std::vector<std::string> out;
  const Buffer& ob = program.buffers[kernel.out];
  out.push_back("(" + storage_type(ob.dtype) + "*)" + buffers + "[" + std::to_string(ob.id) + "]");
  for (BufferId b : kernel.reads()) {
    out.push_back("(const " + storage_type(program.buffers[b].dtype) + "*)" + buffers + "[" +
                  std::to_string(b) + "]");
  }
  for (size_t k = 0; k < program.dims.size(); ++k) out.push_back(dim_name(k));
  return out;
}

std::string CLikeRenderer::kernel_signature(const Program& program, const Kernel& kernel) const {
  std::string s = "void " + kernel.name + "(";
  std::vector<std::string> params = kernel_params(program, kernel);
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
  return s + ")";
}

void CLikeRenderer::open_output_loops(const Kernel& kernel, CodeWriter& w) const {
  for (const Loop& l : kernel.loops) {
    w.open("for (int64_t " + l.var + " = 0; " + l.var + " < " + l.extent.to_c() + "; " + l.var +
           "++)");
  }
}

void CLikeRenderer::close_output_loops(const Kernel& kernel, CodeWriter& w) const {
  for (size_t k = 0; k < kernel.loops.size(); ++k) w.close();
}

void CLikeRenderer::emit_loop_nest(const Kernel& kernel, CodeWriter& w) const {
  open_output_loops(kernel, w);
  emit_body(kernel, w);
  close_output_loops(kernel, w);
}

void CLikeRenderer::open_function(const std::string& signature, const Program& program,
                                  CodeWriter& w) const {
  w.open(signature);
  const std::string prologue = kernel_prologue(program);
  if (!prologue.empty()) w.line(prologue);
}

std::string CLikeRenderer::render_kernel(const Program& program, const Kernel& kernel) const {
  CodeWriter w;
  w.line("/* " + kernel.name + ": writes " + buffer_name(kernel.out) + " */");
  open_function(kernel_signature(program, kernel), program, w);
  if (kernel.attention.present) {
    if (!render_attention(program, kernel, w)) {
      throw InternalError("renderer: no attention kernels");
    }
  } else if (kernel.matmul.present && kernel.matmul.a_computed &&
             render_matmul(program, kernel, w)) {
    // a matmul computing its A (kernel/prologue.h); else its row kernel or the loop nest
  } else if (kernel.row.present) {
    if (!render_row(program, kernel, w)) throw InternalError("renderer: no row kernels");
  } else if (kernel.matmul.present && kernel.matmul.a_q8_0) {
    if (!render_quant_dot(program, kernel, w)) {
      throw CompileError("renderer: kernel " + kernel.name + " multiplies quantized activations, "
                         "which this renderer cannot run");
    }
  } else if (!(kernel.matmul.present && !kernel.matmul.a_computed &&
                render_matmul(program, kernel, w))) {
    emit_loop_nest(kernel, w);
  }
  w.close();
  return w.str();
}

std::string CLikeRenderer::render(const Program& program) const {
  std::string s = "/* Generated by luminal. Deterministic: same program, same text. */\n";
  s += prelude(program);
  for (const Kernel& k : program.kernels) s += "\n" + render_kernel(program, k);
  std::string entry = program_entry(program);
  if (!entry.empty()) s += "\n" + entry;
  return s;
}

}  // namespace luminal
