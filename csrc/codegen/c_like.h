// CLikeRenderer: renders LLIR (kernel/kernel.h) as C-family source text. It owns everything
// the C-like languages share (the helper prelude, the scalar body, index arithmetic, dtype
// conversions); subclasses (c/renderer.cc for the CPU, a CUDA renderer) override the hooks for the
// kernel signature, how output loops map to threads, type names and math builtins.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "kernel/kernel.h"

namespace luminal {

// Indented source text, one statement a line.
class CodeWriter {
 public:
  void line(const std::string& text);
  void open(const std::string& text);   // "text {" then indent
  void close(const std::string& text = "}");  // dedent then "}"
  void middle(const std::string& text);       // "} else {" between two indented blocks
  void blank() { out_ += "\n"; }
  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int depth_ = 0;
};

// The flag a program's kernels set when a Gather's index is out of range (an int32_t, 0
// before the run); the runtime reads it after the run and raises a ShapeError.
constexpr const char* kIndexFault = "lm_index_fault";
// Whether any kernel of `program` loads through an index read at run time (a Gather).
bool reads_bound_indices(const Program& program);

class CLikeRenderer {
 public:
  virtual ~CLikeRenderer() = default;

  // The whole translation unit: prelude, then each kernel, then (if any) the program entry.
  std::string render(const Program& program) const;
  // One kernel as a function definition.
  std::string render_kernel(const Program& program, const Kernel& kernel) const;

  // Names shared by every renderer, so generated sources read alike.
  static std::string buffer_name(BufferId id);  // "b3"
  static std::string dim_name(size_t k);        // "d0"
  static std::string value_name(ValueId id);    // "v5"

 protected:
  // ---- hooks -------------------------------------------------------------------------
  // Integer typedefs, math declarations and the lm_* helpers (floordiv, f16/bf16 codecs...).
  // The base version gives the typedefs (type_prelude) and the helpers every language needs.
  virtual std::string prelude(const Program& program) const;
  virtual std::string type_prelude() const;  // int64_t, int32_t, uint32_t, uint16_t, uint8_t
  // The pointer type a quantized weight's bytes are read through (codegen/c/quant.h):
  // "const uint8_t*", and in MSL with its address space.
  virtual std::string weight_bytes() const { return "const uint8_t*"; }
  // lm_bits and lm_float, a float's bits and back: through a union in C, as_type in MSL.
  virtual std::string bit_cast_helpers() const;
  // Qualifiers of a helper function: "static inline" in C, "__device__ ..." in CUDA.
  virtual std::string helper_qualifiers() const { return "static inline"; }
  // "void k0(float* restrict b2, const float* restrict b0, int64_t d0)" and the like.
  virtual std::string kernel_signature(const Program& program, const Kernel& kernel) const;
  // Statements a kernel body opens with ("" in C and CUDA; MSL reads its dims from a buffer).
  virtual std::string kernel_prologue(const Program& program) const {
    (void)program;
    return "";
  }
  // Partial accumulators of a reduction loop (> 1 lets a CPU vectorize float reductions).
  virtual int reduce_lanes(const Kernel& kernel) const;
  // Opens the output loops (binding every Loop::var); close_output_loops closes them.
  // The CPU maps them to nested for loops with an OpenMP pragma; CUDA to grid/block ids.
  virtual void open_output_loops(const Kernel& kernel, CodeWriter& w) const;
  virtual void close_output_loops(const Kernel& kernel, CodeWriter& w) const;
  // A generic kernel's whole loop nest: its output loops around emit_body. The CPU splits the
  // innermost loop where its padding masks are decided (kernel/interior.h).
  virtual void emit_loop_nest(const Kernel& kernel, CodeWriter& w) const;
  // The program entry point after the kernels ("" for none): the CPU's lm_run.
  virtual std::string program_entry(const Program&) const { return ""; }
  // A matmul-shaped kernel rendered specially; false = use the generic loop nest.
  virtual bool render_matmul(const Program&, const Kernel&, CodeWriter&) const { return false; }
  // A row kernel (kernel/row_kernel.h); false = the renderer has none (an InternalError: the
  // generic loop nest holds one reduction).
  virtual bool render_row(const Program&, const Kernel&, CodeWriter&) const { return false; }
  // An attention kernel (kernel/attention.h); false = the renderer has none (an
  // InternalError: no runtime offers the schedule to a renderer without one).
  virtual bool render_attention(const Program&, const Kernel&, CodeWriter&) const {
    return false;
  }
  // A matmul with quantized activations (MatmulInfo::a_q8_0): x quantized in blocks of 32 and
  // multiplied as integers. A renderer without it refuses the kernel (CompileError): running
  // it as a plain matmul would multiply x unquantized.
  virtual bool render_quant_dot(const Program&, const Kernel&, CodeWriter&) const {
    return false;
  }
  // Storage type of a buffer element ("float", "uint16_t", "int32_t", "uint8_t").
  virtual std::string storage_type(DType dtype) const;
  // Type a value computes in: f32 for every float dtype, int32_t for Int and Bool.
  virtual std::string compute_type(DType dtype) const;
  // A call of the float builtin for a unary op on a float expression: "exp2f(x)".
  virtual std::string math_call(OpKind op, const std::string& x) const;
  // The declaration of kIndexFault in a unit whose kernels read bound indices: "extern" in a
  // C kernel unit (the driver defines it), a __device__ global in CUDA.
  virtual std::string index_fault_declaration() const;
  // An expression that raises kIndexFault and is `zero` (a load of an index out of range).
  virtual std::string index_fault(const std::string& zero) const;
  // An Int value `x` as a float: via double in C (see value_expr), directly where there is no
  // double (MSL).
  virtual std::string int_to_float(const std::string& x) const { return "(float)(double)" + x; }
  // "restrict" in C, "__restrict__" in CUDA.
  virtual std::string restrict_keyword() const { return "restrict"; }

  // ---- the op -> text table (C spellings; a backend overrides the entries it spells apart)
  // A binary op (Add, Mul, Mod, LessThan) of `a` and `b`, computed as `v` says (float, int
  // or bool operands; a half result rounded).
  virtual std::string binary_expr(const Value& v, const std::string& a,
                                  const std::string& b) const;
  // The start value of reduction `v` (a kReduce or kCombine): 0, or the lowest of its dtype.
  virtual std::string reduce_init(const Value& v) const;
  // One step of reduction `v`: `acc` (+ or max) `x`, NaN-propagating for a float max.
  virtual std::string reduce_combine(const Value& v, const std::string& acc,
                                     const std::string& x) const;
  static std::string float_literal(double v);  // "1.5f", "(-2.0f)", "(0.0f / 0.0f)"
  static std::string int_literal(int64_t v);   // "3", "(-3)", "(-2147483647 - 1)"
  static std::string zero_of(DType dtype);     // "0.0f" or "0"
  // Rounds `x`, a float computed in f32, to the precision of a 16-bit `dtype` (else x).
  static std::string round_to(DType dtype, const std::string& x);

  // ---- shared pieces subclasses may call -------------------------------------------
  // The parameters of a kernel: the stored buffer, the read buffers (sorted), then every dim.
  std::vector<std::string> kernel_params(const Program& program, const Kernel& kernel) const;
  // The arguments matching kernel_params, from `buffers` (void* array) and the dim names.
  std::vector<std::string> kernel_args(const Program& program, const Kernel& kernel,
                                       const std::string& buffers) const;
  // Opens a kernel's function: `signature`, then the kernel_prologue.
  void open_function(const std::string& signature, const Program& program, CodeWriter& w) const;
  // The body statements of values [begin, end) as "T vN = ...;" lines.
  void emit_values(const Kernel& kernel, int begin, int end, CodeWriter& w) const;
  // The statement of value `id`, after its run-time symbols not yet in `bound` (Gather).
  void emit_value(const Kernel& kernel, ValueId id, std::set<std::string>& bound,
                  CodeWriter& w) const;
  // The loop of reduction `reduce` over `loop`, its body the values `body`, into `lanes`
  // partial accumulators: declares the accumulator (the reduction's value name) before it.
  // `also`, when given, is a statement each iteration runs after the body (a row kernel's
  // store of a value its row loop reads back, kernel/row_kernel.h RowStash); `per_block` one
  // that each block of `lanes` iterations runs first, `<var>_b` its first (a row kernel's
  // prefetch of the next row).
  void emit_reduction_loop(const Kernel& kernel, ValueId reduce, const Loop& loop, int lanes,
                           const std::vector<ValueId>& body, CodeWriter& w,
                           const std::string& also = "",
                           const std::string& per_block = "") const;

  // ---- the online softmax as every C-like renderer spells it (online_softmax.cc) --------
  // exp2(c * (a - b)), read as 1 where a == b: the online softmax's rescaling of a sum kept
  // against max a to max b, and a term's weight (kernel/row_kernel.h match_online).
  std::string online_weight(const std::string& c, const std::string& a,
                            const std::string& b) const;
  // A row kernel's online recurrence (RowInfo::online_*) by name: its max m, its sum, the
  // max's operand x and the scale c as C.
  struct OnlineNames {
    std::string m, sum, x, c;
  };
  OnlineNames online_names(const Kernel& kernel) const;
  // Before the recurrence: its comment, m at -inf and the sum at 0.
  void emit_online_start(const OnlineNames& names, CodeWriter& w) const;
  // After the recurrence: the sum NaN where the max is not finite (as the two loops give).
  void emit_online_finish(const OnlineNames& names, CodeWriter& w) const;
  // The values `cone` (in SSA order) as statements, each run-time symbol bound afresh.
  void emit_cone(const Kernel& kernel, const std::vector<ValueId>& cone, CodeWriter& w) const;
  // Attention kernel `kernel`'s shift of a running max held in `m` into `g`, in a block of
  // its own (AttentionInfo::shift_cone).
  void emit_attention_shift(const Kernel& kernel, const std::string& m, const std::string& g,
                            CodeWriter& w) const;
  // The finish of an attention row whose running max is `m` and sum `l`: its final shift
  // lm_g and lm_norm, the norm (AttentionInfo::norm_cone, 1 where there is none), NaN where
  // the shift is not finite (as exp2(inf - inf) makes it).
  void emit_attention_finish(const Kernel& kernel, const std::string& m, const std::string& l,
                             CodeWriter& w) const;
  // The whole loop body of a generic kernel: reduction loop (if any), epilogue and store.
  void emit_body(const Kernel& kernel, CodeWriter& w) const;
  // Reads buffer element `index` of `dtype` as its compute type.
  std::string load_expr(DType dtype, const std::string& buffer, const std::string& index) const;
  // A stored element `raw` of `dtype` as its compute type.
  std::string to_compute(DType dtype, const std::string& raw) const;
  // Converts expression `x` of compute type for `dtype` to its storage.
  std::string store_expr(DType dtype, const std::string& x) const;
  std::string value_expr(const Kernel& kernel, ValueId id) const;  // right-hand side of vN
  // "bN[index] = last value;": the store of a kernel's result.
  std::string store_statement(const Kernel& kernel) const;
  // A matmul kernel's sum `acc` (an f32 expression) as its value, then its epilogue
  // (MatmulInfo::epilogue_from) on it at the output element the loop variables name; the last
  // value is the one to store.
  void emit_epilogue(const Kernel& kernel, const std::string& acc, CodeWriter& w) const;
  // The store of a matmul kernel's sum `acc` at the output element the loop variables name:
  // as is, or through its epilogue.
  void emit_sum_store(const Kernel& kernel, const std::string& acc, CodeWriter& w) const;
};

}  // namespace luminal
