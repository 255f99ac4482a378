// The C renderer's hooks: libm declarations and a vectorizable exp2, static kernels taking the
// thread count, OpenMP on the output loops (each kernel's team), and lm_run calling the
// kernels in order; and the split of a program into one unit per distinct kernel plus a driver
// whose lm_run runs a table of the calls.
#include "codegen/c/renderer.h"

#include <algorithm>
#include <map>
#include <set>

#include "codegen/c/outline.h"
#include "codegen/c/schedule.h"
#include "codegen/planted_fault.h"
#include "core/hash.h"
#include "kernel/canonical.h"
#include "kernel/block_split.h"
#include "kernel/interior.h"

namespace luminal {

namespace {
// 2^f for |f| <= 0.5 (a polynomial) after k = round(c), f = c - k: lm_exp2f's and
// lm_exp2f_flush's, which differ in the clamp of c before it and the scale by 2^k after.
constexpr const char* kExp2Polynomial =
    "  float k = floorf(c + 0.5f);\n"
    "  float f = c - k;\n"
    "  float p = 1.535336188319500e-4f;\n"
    "  p = p * f + 1.339887440266574e-3f;\n"
    "  p = p * f + 9.618437357674640e-3f;\n"
    "  p = p * f + 5.550332471162809e-2f;\n"
    "  p = p * f + 2.402264791363012e-1f;\n"
    "  p = p * f + 6.931472028550421e-1f;\n"
    "  p = p * f + 1.0f;\n";
}  // namespace

std::string CRenderer::prelude(const Program& program) const {
  std::string s = CLikeRenderer::prelude(program);
  s += "float log2f(float);\n"
       "float exp2f(float);\n"
       "float sinf(float);\n"
       "float sqrtf(float);\n"
       "float fmodf(float, float);\n"
       "float floorf(float);\n"
       "void* malloc(unsigned long);\n"
       "void free(void*);\n";
  s += "/* 2^x without a libm call, so loops over it vectorize: 2^k * p(f) with |f| <= 0.5,\n"
       "   the scale split in two so subnormal and overflowing results round correctly. */\n";
  s += "static inline float lm_exp2f(float x) {\n"
       "  float c = x < -151.0f ? -151.0f : (x > 129.0f ? 129.0f : x);\n" +
       std::string(kExp2Polynomial) +
       "  int32_t ki = (int32_t)k;\n"
       "  int32_t k1 = ki >> 1;\n"
       "  int32_t k2 = ki - k1;\n"
       "  float r = p * lm_float((uint32_t)(k1 + 127) << 23) * lm_float((uint32_t)(k2 + 127) << 23);\n"
       "  return x != x ? x : r;\n"
       "}\n";
  s += "/* 2^x with a result below 2^-127 flushed to 0 (-inf gives 0), one scale: an attention's\n"
       "   softmax weights, each beside a weight of 1. NaN stays NaN. */\n";
  s += "static inline float lm_exp2f_flush(float x) {\n"
       "  float c = x < -127.0f ? -127.0f : (x > 128.0f ? 128.0f : x);\n" +
       std::string(kExp2Polynomial) +
       "  return p * lm_float((uint32_t)((int32_t)k + 127) << 23);\n"
       "}\n";
  s += "/* log2 with 0 and 1 answered without a libm call: a mask's log2 of a 0/1 value (-inf\n"
       "   where false) costs two compares per element. */\n";
  s += "static inline float lm_log2f(float x) {\n"
       "  return x == 1.0f ? 0.0f : (x == 0.0f ? (-1.0f / 0.0f) : log2f(x));\n"
       "}\n";
  return s + matmul_prelude(program);
}

std::string CRenderer::math_call(OpKind op, const std::string& x) const {
  if (op == OpKind::Exp2) return "lm_exp2f(" + x + ")";
  if (op == OpKind::Log2) return "lm_log2f(" + x + ")";
  if (planted_unary_fault(op)) {
    return "(1.01f * " + CLikeRenderer::math_call(op, x) + ")";
  }
  return CLikeRenderer::math_call(op, x);
}

std::string CRenderer::kernel_signature(const Program& program, const Kernel& kernel) const {
  std::string linkage = split_ ? "__attribute__((visibility(\"hidden\"))) void " : "static void ";
  std::string s = linkage + kernel.name + "(";
  std::vector<std::string> params = kernel_params(program, kernel);
  params.push_back("int lm_threads");
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
  return s + ")";
}

int CRenderer::reduce_lanes(const Kernel& kernel) const {
  return lanes_of(kernel, kernel.values[kernel.reduce_at], kernel.reduce[0]);
}

int CRenderer::lanes_of(const Kernel& kernel, const Value& red, const Loop& loop) const {
  if (red.dtype != DType::F32) return 1;
  auto extent = loop.extent.try_const();
  if (extent && *extent < 32) return 1;
  return static_cast<int>(schedule_of(kernel).vector_width);
}

std::string CRenderer::omp_loops_pragma(const Kernel& kernel, bool inner_apart) const {
  size_t rank = kernel.loops.size();
  Expr work = 1;
  for (const Loop& l : kernel.loops) work = work * l.extent;
  for (const Loop& l : kernel.reduce) work = work * l.extent;
  size_t collapse = kernel.reduce.empty() ? (rank > 1 ? rank - 1 : 1) : rank;
  if (kernel.reduce.empty() && rank > 1 && !inner_apart) {
    auto inner = kernel.loops.back().extent.try_const();
    if (inner && *inner < 16) collapse = rank;
  }
  std::string team = omp_team(kernel, work.to_c());
  if (team.empty()) return "";
  std::string pragma = "#pragma omp parallel for" + team + " schedule(static)";
  if (collapse > 1) pragma += " collapse(" + std::to_string(collapse) + ")";
  return pragma;
}

void CRenderer::open_output_loops(const Kernel& kernel, CodeWriter& w) const {
  if (kernel.loops.empty()) return;
  std::string pragma = omp_loops_pragma(kernel, false);
  if (!pragma.empty()) w.line(pragma);
  CLikeRenderer::open_output_loops(kernel, w);
}

void CRenderer::emit_loop_nest(const Kernel& kernel, CodeWriter& w) const {
  size_t rank = kernel.loops.size();
  auto split = rank > 1 ? interior_split(kernel) : std::nullopt;
  auto blocks = rank > 1 && !split ? block_split(kernel) : std::nullopt;
  if (!split && !blocks) {
    CLikeRenderer::emit_loop_nest(kernel, w);
    return;
  }
  std::string pragma = omp_loops_pragma(kernel, true);  // the innermost loop is split
  if (!pragma.empty()) w.line(pragma);
  for (size_t k = 0; k + 1 < rank; ++k) {
    const Loop& l = kernel.loops[k];
    w.open("for (int64_t " + l.var + " = 0; " + l.var + " < " + l.extent.to_c() + "; " + l.var +
           "++)");
  }
  const Loop& inner = kernel.loops.back();
  std::string v = inner.var, n = inner.extent.to_c();
  auto part = [&](const std::string& from, const std::string& to, const Kernel& body) {
    w.open("for (int64_t " + v + " = " + from + "; " + v + " < " + to + "; " + v + "++)");
    emit_body(body, w);
    w.close();
  };
  if (blocks) {  // in blocks (kernel/block_split.h): io outside, the block's own loop inside
    const std::string& io = blocks->outer;
    w.open("for (int64_t " + io + " = 0; " + io + " < " + std::to_string(blocks->blocks) +
           "; " + io + "++)");
    part("0", std::to_string(blocks->block), blocks->inside);
    w.close();
  } else {
    w.line("/* " + v + " in [" + v + "_lo, " + v + "_hi): every padding mask holds */");
    w.line("int64_t " + v + "_lo = " + split->lo.to_c() + ";");
    w.line("int64_t " + v + "_hi = " + split->hi.to_c() + ";");
    w.line("if (" + v + "_lo > " + n + ") " + v + "_lo = " + n + ";");
    w.line("if (" + v + "_hi < " + v + "_lo) " + v + "_hi = " + v + "_lo;");
    if (!is_one(split->outer)) {
      w.line("if (!(" + split->outer.to_c() + ")) " + v + "_lo = " + v + "_hi = " + n + ";");
    }
    part("0", v + "_lo", kernel);
    part(v + "_lo", v + "_hi", split->inside);
    part(v + "_hi", n, kernel);
  }
  for (size_t k = 0; k + 1 < rank; ++k) w.close();
}

CpuSchedule CRenderer::schedule_of(const Kernel& kernel) const {
  return cpu_schedule(kernel, vector_width_);
}

std::string CRenderer::omp_team(const Kernel& kernel, const std::string& work) const {
  int64_t threads = schedule_of(kernel).threads;
  if (threads == 1) return "";
  if (threads > 1) {
    std::string n = std::to_string(threads);
    return " num_threads(lm_threads < " + n + " ? lm_threads : " + n + ")";
  }
  return " num_threads(lm_threads) if(" + work + " >= " + std::to_string(kCpuParallelWork) + ")";
}

std::string CRenderer::program_entry(const Program& program) const {
  CodeWriter w;
  if (reads_bound_indices(program)) {
    w.line("int32_t " + std::string(kIndexFault) + " = 0;  /* set by a Gather out of range */");
    w.blank();
  }
  // lm_seconds (null, or one slot per kernel) receives each kernel's time by lm_now.
  w.open("void lm_run(void** lm_buffers, const int64_t* lm_dims, int lm_threads, "
         "double* lm_seconds, double (*lm_now)(void))");
  for (size_t k = 0; k < program.dims.size(); ++k) {
    w.line("const int64_t " + dim_name(k) + " = lm_dims[" + std::to_string(k) + "];");
  }
  w.line("double lm_t = 0;");
  for (size_t i = 0; i < program.kernels.size(); ++i) {
    const Kernel& k = program.kernels[i];
    std::vector<std::string> args = kernel_args(program, k, "lm_buffers");
    args.push_back("lm_threads");
    std::string call = k.name + "(";
    for (size_t a = 0; a < args.size(); ++a) call += (a ? ", " : "") + args[a];
    w.line("if (lm_seconds) lm_t = lm_now();");
    w.line(call + ");");
    w.line("if (lm_seconds) lm_seconds[" + std::to_string(i) + "] = lm_now() - lm_t;");
  }
  w.close();
  return w.str();
}

namespace {

constexpr const char* kHeader =
    "/* Generated by luminal. Deterministic: same program, same text. */\n";

// The parameters of every kernel entry: the program's buffers, the slots in them of the
// kernel's output and reads, the program's dims, the thread count.
constexpr const char* kEntryParams =
    "(void** lm_b, const int32_t* lm_slot, const int64_t* lm_d, int lm_threads)";

}  // namespace

std::string CRenderer::kernel_entry(const Program& alone, const Kernel& kernel) const {
  std::vector<std::string> args;
  const std::vector<BufferId> reads = kernel.reads();
  args.push_back("(" + storage_type(alone.buffers[kernel.out].dtype) + "*)lm_b[lm_slot[0]]");
  for (size_t i = 0; i < reads.size(); ++i) {
    args.push_back("(const " + storage_type(alone.buffers[reads[i]].dtype) + "*)lm_b[lm_slot[" +
                   std::to_string(i + 1) + "]]");
  }
  for (size_t k = 0; k < alone.dims.size(); ++k) args.push_back("lm_d[" + std::to_string(k) + "]");
  args.push_back("lm_threads");
  std::string call = kernel.name + "(";
  for (size_t a = 0; a < args.size(); ++a) call += (a ? ", " : "") + args[a];
  return "__attribute__((visibility(\"hidden\"))) void " + kernel.name + "_entry" +
         kEntryParams + " {\n  " + call + ");\n}\n";
}

std::string CRenderer::split_entry(const Program& program) const {
  CodeWriter w;
  if (reads_bound_indices(program)) {
    w.line("int32_t " + std::string(kIndexFault) + " = 0;  /* set by a Gather out of range */");
    w.blank();
  }
  const size_t n = program.kernels.size();
  std::string steps;
  std::string slots;
  std::string first;  // where each call's slots start in lm_slots
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    const Kernel& k = program.kernels[i];
    steps += (i ? ", " : "") + k.name + "_entry";
    first += (i ? ", " : "") + std::to_string(at);
    slots += (at ? ", " : "") + std::to_string(program.buffers[k.out].id);
    ++at;
    for (BufferId b : k.reads()) {
      slots += ", " + std::to_string(b);
      ++at;
    }
  }
  if (n == 0) steps = slots = first = "0";  // a program of no kernels: arrays of one zero
  w.line(std::string("typedef void (*lm_entry)") + kEntryParams + ";");
  w.line("static const lm_entry lm_steps[" + std::to_string(std::max<size_t>(n, 1)) + "] = {" +
         steps + "};");
  w.line("static const int32_t lm_slots[" + std::to_string(std::max<size_t>(at, 1)) + "] = {" +
         slots + "};");
  w.line("static const int32_t lm_first[" + std::to_string(std::max<size_t>(n, 1)) + "] = {" +
         first + "};");
  w.blank();
  // lm_seconds (null, or one slot per kernel) receives each kernel's time by lm_now.
  w.open("void lm_run(void** lm_buffers, const int64_t* lm_dims, int lm_threads, "
         "double* lm_seconds, double (*lm_now)(void))");
  w.open("for (int lm_i = 0; lm_i < " + std::to_string(n) + "; lm_i++)");
  w.line("double lm_t = lm_seconds ? lm_now() : 0;");
  w.line("lm_steps[lm_i](lm_buffers, lm_slots + lm_first[lm_i], lm_dims, lm_threads);");
  w.line("if (lm_seconds) lm_seconds[lm_i] = lm_now() - lm_t;");
  w.close();
  w.close();
  w.blank();
  // One kernel alone (the kernels before it have run): the search's kernel-by-kernel check.
  w.open("void lm_step(int lm_i, void** lm_buffers, const int64_t* lm_dims, int lm_threads)");
  w.line("lm_steps[lm_i](lm_buffers, lm_slots + lm_first[lm_i], lm_dims, lm_threads);");
  w.close();
  return w.str();
}

std::string CSplitProgram::text() const {
  std::string s = "/* ---- " + driver.name + " ---- */\n" + driver.source;
  for (const CUnit& u : kernels) s += "\n/* ---- " + u.name + " ---- */\n" + u.source;
  for (const CUnit& u : helpers) s += "\n/* ---- " + u.name + " ---- */\n" + u.source;
  return s;
}

CSplitProgram CRenderer::render_split(const Program& program) const {
  CRenderer unit(vector_width_);
  unit.split_ = true;
  CSplitProgram out;
  std::set<std::string> seen;  // names of the units made so far
  std::string prototypes;
  std::map<std::string, std::string> helpers;  // name -> unit (outline_helpers)
  Program named = program;  // the kernels under their unit names, for lm_run
  for (Kernel& k : named.kernels) {
    // The name hashes the unit as rendered in the kernel's canonical form.
    Program alone = canonical_kernel(program, k);
    std::string draft = unit.prelude(alone) + "\n" + unit.render_kernel(alone, alone.kernels[0]);
    std::string name = "lm_k" + hex64(fnv1a(draft));
    k.name = name;
    out.steps.push_back(name);
    if (!seen.insert(name).second) continue;
    alone.kernels[0].name = name;
    std::string text = unit.prelude(alone) + "\n" + unit.render_kernel(alone, alone.kernels[0]) +
                       "\n" + unit.kernel_entry(alone, alone.kernels[0]);
    out.kernels.push_back({name, outline_helpers(kHeader + text, helpers)});
    prototypes += "__attribute__((visibility(\"hidden\"))) void " + name + "_entry" +
                  kEntryParams + ";\n";
  }
  for (auto& [helper, source] : helpers) out.helpers.push_back({helper, source});
  out.driver.name = "lm_run";
  out.driver.source = kHeader + type_prelude() + "\n" + prototypes + "\n" + split_entry(named);
  return out;
}

}  // namespace luminal
