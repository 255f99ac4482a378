// LLIR: a program is a list of kernels over a list of buffers. A kernel is a loop nest over an
// output index space with a fused scalar body in SSA form, one reduction loop (or, in a row
// kernel, several over the rows: kernel/row_kernel.h), one store, and tuning parameters.
// Index arithmetic is symbolic (Expr over loop variables and the program's dims) and renders
// to C with Expr::to_c. Renderers (csrc/codegen) read this; lowering (kernel/lower.h),
// buffer planning (kernel/memory_plan.h) and the weight layout (kernel/weight_layout.h) write it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/symbolic.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "kernel/weight_layout.h"
#include "kernel/winograd.h"

namespace luminal {

using BufferId = int32_t;
using ValueId = int32_t;

enum class BufferRole : uint8_t {
  kInput,   // the data of an HLIR Input node, set by the user
  kOutput,  // the value of an HLIR Output node, read by the user
  kTemp,    // an intermediate, placed in the arena by the memory plan
};

struct Buffer {
  BufferId id = 0;  // == its position in Program::buffers
  BufferRole role = BufferRole::kTemp;
  DType dtype = DType::F32;  // storage: f16/bf16 are 16-bit words
  Expr numel;                // elements, over the program's dims (renamed, see Program::dims)
  NodeId node = -1;          // the HLIR node whose value it holds
  bool panels = false;       // an input's data as its GEMMs' panels (Kernel::panels), set
                             // when its data is: a second buffer of the node where other
                             // kernels read the data as stored (kernel/weight_layout.h)
};

// A symbol of a load's index bound to a value read at run time (Gather): the load is valid
// only where 0 <= value < limit, so an out-of-range index reads 0 instead of crashing; where
// `checked` holds too (the element is one the program computes, not one a view masks away)
// it also raises the program's index fault, which the runtime reports after the run.
struct Bind {
  std::string symbol;  // "g7"
  ValueId value = -1;  // an Int value of the same kernel
  Expr limit;          // number of elements the index may address
  Expr checked = 1;    // where an index out of range is an error
};

// One scalar operation. values[i] reads only values[j] with j < i.
enum class ValueKind : uint8_t {
  kLoad,    // buffers[buffer][index] where `valid` != 0, else 0
  kConst,   // `number` in `dtype` (casts like NativeRuntime's store of a Constant)
  kIndex,   // the int64 expression `index` (Iota elements, symbolic constants), wrapped to dtype
  kUnary,   // op (a Unary op of ops.def) of args[0]
  kBinary,  // op (Add, Mul, Mod, LessThan) of args[0], args[1]; both of dtype `operand`
  kCast,    // args[0] (of dtype `operand`) converted to `dtype`
  kSelect,  // `valid` != 0 ? args[0] : 0   (the padding mask of an inlined view)
  kReduce,  // op (SumReduce, MaxReduce) of args[0] over the kernel's reduction loop
  kCombine, // one step of a reduction op (SumReduce, MaxReduce): args[0] (+ or max) args[1],
            // for reductions over a few elements that lowering unrolls
};

struct Value {
  ValueKind kind = ValueKind::kConst;
  DType dtype = DType::F32;    // of the result; f16/bf16 values are computed in f32
  DType operand = DType::F32;  // kBinary, kCast: dtype of the inputs
  OpKind op = OpKind::Add;     // kUnary, kBinary, kReduce, kCombine
  std::vector<ValueId> args;
  BufferId buffer = -1;  // kLoad
  Expr index;            // kLoad: element of the buffer; kIndex: the value
  Expr valid = 1;        // kLoad, kSelect: 0 where the read falls in padding / out of range
  double number = 0;     // kConst
  std::vector<Bind> binds;  // kLoad: run-time symbols of index/valid (Gather)
};

// A loop of the nest: variable `var` runs over [0, extent).
struct Loop {
  std::string var;  // "i0", "i1", ... for output axes; "r0" for the reduction
  Expr extent;
};

// A matmul-shaped kernel: out[..., m, n] = sum_k a[..., m, k] * b[..., k, n], with a and b
// plain loads (no mask, no run-time symbols, affine index; or a computed, a_computed), each
// read as stored or widened
// from a 16-bit float to f32 by a Cast in the body (a bf16 weight read by an f32 matmul), the
// product summed as is or widened to f32 first (a half product). Found by match_matmul
// (kernel/match.h) at lowering; each renderer then decides whether it emits its own matmul
// kernel for it (the C renderer for f32 products with a read as stored and b as stored or
// widened, the CUDA renderer for any float dtype) or the generic loop nest.
struct MatmulInfo {
  bool present = false;  // the fields below are set only when it is
  int m_loop = -1;       // index into Kernel::loops: the next-to-last loop
  int n_loop = -1;       // the last loop
  ValueId a = -1;        // the kLoad values of the two operands: a moves along m, b along n
  ValueId b = -1;
  DType dtype = DType::F32;    // of the Mul's operands: the loads', or f32 where widened
  DType a_stored = DType::F32;  // the dtype of a's buffer (== dtype unless a_widened)
  DType b_stored = DType::F32;
  bool a_widened = false;  // a is narrow storage (f16, bf16, quantized) cast to f32 in the body
  bool b_widened = false;
  bool product_widened = false;  // the product is cast to f32 before the sum
  // Element strides of a and b along m, n, k (constant or symbolic), from their index Exprs.
  Expr a_m, a_k, b_k, b_n;
  // The first value of the epilogue, the elementwise work on the sum before the store
  // (values[epilogue_from:], reading the sum and their own loads; kernel/epilogue.h), or -1
  // when the sum is stored as is. A renderer that cannot run it renders the generic loop nest.
  int epilogue_from = -1;
  // a is computed in the kernel from its row instead of loaded (a norm before a Linear:
  // schedule kPrologueParam, kernel/prologue.h): a is then the Mul's operand, a value of the k
  // loop computed from loads, constants and values of its row alone: its statistics a_rows
  // (reductions over loops of their own, Kernel::reduce[j] for a_rows[j]; the matmul's k loop is
  // the last of Kernel::reduce) and elementwise work on them. a_scope says, per value, where it
  // runs; a_m and a_k are 0, a_stored is f32. A renderer that cannot compute a renders the row
  // kernel (`row`, when a_rows is not empty) or the generic loop nest.
  bool a_computed = false;
  static constexpr int kNotA = -3;     // a_scope: not in a's cone
  static constexpr int kElement = -2;  // once per element of A (m, k)
  static constexpr int kRowScope = -1;  // once per row of A; j >= 0: in a_rows[j]'s loop
  std::vector<ValueId> a_rows;
  std::vector<int> a_scope;
  // a holds x, and the kernel computes with the Q8_0 round trip of x along k instead
  // (ir/quant_activations.h; schedule kQuantDotParam, kernel/quant_dot.h): a renderer that
  // cannot quantize x in blocks of 32 must refuse the kernel, never multiply x as it is.
  bool a_q8_0 = false;
  // b is a load of the data of a Gather at index arithmetic of the loops, through its padding
  // mask (a convolution's windows; schedule kWindowParam, kernel/window.h): its index and valid
  // Exprs move with n and k in no fixed stride (b_k and b_n are 0), never with m. A renderer
  // that cannot gather b as it reads it renders the generic loop nest.
  bool b_window = false;
  // The window is a 3x3 stride-1 convolution the kernel computes by Winograd's F(2x2, 3x3)
  // (schedule kWinogradParam, kernel/winograd.h): its geometry. A renderer that has no Winograd
  // kernel renders the window matmul.
  std::optional<WinogradConv> winograd;
};

// A kernel's reductions over its rows and where each value runs (kernel/row_kernel.h).
struct RowInfo {
  static constexpr int kRowScope = -1;  // once per row, outside every inner loop
  bool present = false;  // the fields below are set only when it is
  int row_loop = -1;     // index into Kernel::loops of the loop run after the reductions (the
                         // row itself); -1: the kernel stores one value per row
  std::vector<ValueId> reductions;  // the kReduce values, in order; loop k is Kernel::reduce[k]
  // The loops over the rows: every output loop but row_loop, outermost first (indices into
  // Kernel::loops). A renderer runs a row per element of their product (a thread team's share,
  // a warp's).
  std::vector<int> rows;
  // Per value: kRowScope, k (inside reduction loop k) or reductions.size() (inside the row
  // loop). A kReduce value is row scope: it is the accumulator once its loop has run.
  std::vector<int> scope;
  // Softmax's max and sum in one loop (schedule row 2; kernel/row_kernel.h match_online):
  // loop `online` is a float max m of x, loop online + 1 the sum of exp2(online_scale * (x' -
  // m)), x' the same value as x; both run in loop `online` by the online recurrence. -1: none.
  int online = -1;
  ValueId online_scale = -1;  // the kConst scale (log2(e) for softmax), > 0
  ValueId online_max = -1;    // where online >= 0: reductions[online], the max m
  ValueId online_sum = -1;    //   reductions[online + 1], the sum
  ValueId online_x = -1;      //   the max's operand x, over loop `online`
};

// A flash-attention-shaped kernel (schedule kAttentionParam, kernel/attention.h):
//   out[.., i, d] = sum_j w_ij * norm_i * v[.., j, d],  w_ij = exp2(c * (x_ij - g_i)),
// x_ij the scores (values over j of the dot product q[i, :] . k[j, :]: scale, masks), g_i the
// shift (the row max of x, or a row value of it such as max(m, lowest)), norm_i a row value of
// the sum of w over j (1 / sum, or 1 where absent). Found by match_attention; a renderer runs
// it over tiles of query rows streaming over key tiles with the online-softmax recurrence, so
// the scores never reach memory.
struct AttentionInfo {
  bool present = false;  // the fields below are set only when it is
  int key_reduce = -1;   // index into Kernel::reduce: the keys j (the root's loop)
  int dot_reduce = -1;   // the head dim of the scores' dot product (constant extent)
  int query_loop = -1;   // index into Kernel::loops: the rows tiled together (k reads none)
  int value_loop = -1;   // the last loop: v's features d (constant extent)
  ValueId dot = -1;      // kReduce Sum over dot_reduce of q * k
  ValueId q = -1;        // the dot's operands: q not moving along the keys
  ValueId k = -1;        //   and k along neither the query rows nor d
  ValueId score = -1;    // x: a value over the keys read from the dot (never over d)
  // score = dot * dot_scale + bias where it has that form (dot_scale a kConst, or -1 for 1;
  // bias a value not read from the dot: a mask), else bias = -1. A renderer may skip a tile
  // whose bias is -inf throughout where the dot cannot overflow (the score is -inf there).
  ValueId bias = -1;
  ValueId dot_scale = -1;
  ValueId max = -1;      // kReduce Max of score over the keys, or -1: the shift is read
  ValueId shift = -1;    // g: max, or a row value of max alone (and constants, row loads)
  ValueId scale = -1;    // kConst c > 0
  ValueId weight = -1;   // w: the Exp2 of c * (score - shift)
  ValueId sum = -1;      // kReduce Sum of weight over the keys, or -1
  ValueId norm = -1;     // the row value the weights are multiplied by, or -1 for none
  ValueId value = -1;    // v: a value over the keys and value_loop (no query row's)
  // The loops of the query rows: every output loop but value_loop, outermost first (indices
  // into Kernel::loops; query_loop among them). A renderer runs one row at a time, or tiles of
  // query_loop.
  std::vector<int> rows;
  // What a renderer emits (kernel/attention.h attention_cone, in SSA order) to compute the
  // shift from the max (max, if any, not listed: a renderer binds it to its running max) and
  // the norm from the sum and the max (empty where norm is -1).
  std::vector<ValueId> shift_cone;
  std::vector<ValueId> norm_cone;
};

struct Kernel {
  std::string name;              // "k0", "k1", ... in execution order
  NodeId root = -1;              // the HLIR node whose value it computes
  std::vector<Loop> loops;       // output axes, outermost first (may be empty: a scalar)
  std::vector<Loop> reduce;      // zero or one loop; values before `reduce_at` run inside it
                                 // (a row kernel: one per reduction, as `row` says; an
                                 // attention kernel: the dot's, then the keys', as
                                 // `attention` says)
  int reduce_at = -1;            // index of the kReduce value, or -1 (a row kernel: the last)
  std::vector<Value> values;     // the body; the last value is stored
  BufferId out = -1;             // the buffer stored to, at `out_index`
  Expr out_index;                // over the output loop variables
  // The program-wide choice's params, then the root node's own (a later entry of a name
  // overrides an earlier one): raw, as lowering found them; each renderer reads its typed view
  // (codegen/c/schedule.h CpuSchedule, codegen/cuda/renderer.h CudaSchedule).
  ScheduleParams schedule;
  MatmulInfo matmul;
  RowInfo row;  // present when reductions other than the root run inside the kernel
  AttentionInfo attention;  // present for an attention kernel (then `row` is not)
  // A matmul's B read from the panels the runtime laid out once (kernel/weight_layout.h,
  // settled after lowering); empty: B is read as stored.
  std::optional<PackedPanels> panels;

  // Buffers read by this kernel, sorted, without `out`.
  std::vector<BufferId> reads() const;
  // Whether it is a plain elementwise loop nest: output loops, no reduction, no recognised
  // pattern (matmul, row, attention). What a renderer may restructure (kernel/interior.h,
  // kernel/block_split.h).
  bool plain_loop_nest() const;
  // Per value: whether value `from` depends on it (itself included), through args and binds.
  std::vector<bool> cone(ValueId from) const;
  std::string to_string() const;  // s-expression text, stable across runs
};

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;  // in execution order
  // The graph's symbols, sorted. Inside the program the k-th is renamed "d<k>" (so any user
  // symbol name is safe in C); kernels take them as int64 arguments in this order.
  std::vector<std::string> dims;

  std::string to_string() const;
};

}  // namespace luminal
