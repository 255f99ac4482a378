// The CUDA renderer: the prelude (the C-like helpers as device functions, warp and tensor-core
// helpers), kernel signatures, the grid-stride thread-per-output mapping, the warp-per-output
// reduction with vector loads, and the choice of mapping per kernel. Matmul kernels live in
// cuda/matmul.cc, the GEMV in cuda/gemv.cc.
#include "codegen/cuda/renderer.h"

#include <map>
#include <set>

#include "core/errors.h"
#include "kernel/canonical.h"

namespace luminal {

namespace {
using gpu::KernelLaunch;
using gpu::LaunchMode;

// Loads inside the reduction loop that read consecutive elements along r0: 16-byte loads.
struct VectorLoad {
  ValueId value;
  Expr base;  // the index at r0 = 0
};

std::vector<VectorLoad> vector_loads(const Kernel& kernel) {
  std::vector<VectorLoad> out;
  const std::string& r = kernel.reduce[0].var;
  for (int i = 0; i < kernel.reduce_at; ++i) {
    const Value& v = kernel.values[i];
    if (v.kind != ValueKind::kLoad || !v.binds.empty() || !is_const(v.valid, 1)) continue;
    if (v.dtype == DType::Bool || is_quantized(v.dtype)) continue;  // quantized: its reader
    auto s = affine_stride(v.index, r);
    if (!s || !is_const(*s, 1)) continue;
    out.push_back(VectorLoad{i, v.index.substitute(r, 0)});
  }
  return out;
}
}  // namespace

std::string CudaRenderer::index_fault_declaration() const {
  return "__device__ int32_t " + std::string(kIndexFault) + ";\n";
}

std::string CudaRenderer::index_fault(const std::string& zero) const {
  return "(" + std::string(kIndexFault) + " = 1, " + zero + ")";  // every writer writes 1
}

std::string CudaRenderer::prelude(const Program& program) const {
  std::string q = helper_qualifiers() + " ";
  std::string s = CLikeRenderer::prelude(program);
  // Declared in every module (the base declares it only where a kernel reads bound indices):
  // a batch of programs shares the first one's prelude, and CudaRuntime reads it from each.
  if (!reads_bound_indices(program)) s += index_fault_declaration();
  s += "/* Warp-wide reductions with butterfly shuffles: every lane gets the result. */\n";
  s += q + "float lm_warp_sum(float x) {\n"
           "  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);\n"
           "  return x;\n"
           "}\n";
  s += q + "int32_t lm_warp_isum(int32_t x) {\n"
           "  for (int o = 16; o > 0; o >>= 1) {\n"
           "    x = (int32_t)((uint32_t)x + (uint32_t)__shfl_xor_sync(0xffffffffu, x, o));\n"
           "  }\n"
           "  return x;\n"
           "}\n";
  s += q + "float lm_warp_max(float x) {\n"
           "  for (int o = 16; o > 0; o >>= 1) x = lm_fmax_nan(x, __shfl_xor_sync(0xffffffffu, x, o));\n"
           "  return x;\n"
           "}\n";
  s += q + "int32_t lm_warp_imax(int32_t x) {\n"
           "  for (int o = 16; o > 0; o >>= 1) {\n"
           "    int32_t y = __shfl_xor_sync(0xffffffffu, x, o);\n"
           "    x = y > x ? y : x;\n"
           "  }\n"
           "  return x;\n"
           "}\n";
  if (sm_ >= 80) {
    s += "/* D += A * B on tensor cores: m16n8k16, f32 accumulators (PTX mma.sync). */\n";
    const char* types[2][2] = {{"f16", "f16"}, {"bf16", "bf16"}};
    for (auto& t : types) {
      s += q + "void lm_mma_" + std::string(t[0]) +
           "(float* d, const uint32_t* a, const uint32_t* b) {\n"
           "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." + t[1] + "." + t[1] +
           ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\"\n"
           "               : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])\n"
           "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]),"
           " \"r\"(b[1]));\n"
           "}\n";
    }
  }
  return s;
}

std::string CudaRenderer::signature(const Program& program, const Kernel& kernel,
                                    int block) const {
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(block) +
                  ") " + kernel.name + "(";
  std::vector<std::string> params = kernel_params(program, kernel);
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
  return s + ")";
}

void CudaRenderer::open_kernel(const Program& program, const Kernel& kernel, int block,
                               CodeWriter& w) const {
  open_function(signature(program, kernel, block), program, w);
}

std::string CudaRenderer::kernel_signature(const Program& program, const Kernel& kernel) const {
  return signature(program, kernel, block(kernel));
}

CudaSchedule CudaRenderer::schedule_of(const Kernel& kernel) const {
  return schedule_.with(kernel.schedule).under(fixed_);
}

int CudaRenderer::block(const Kernel& kernel) const {
  int b = schedule_of(kernel).block;
  return b > 0 ? b : 256;
}

void emit_unravel(const std::vector<Loop>& loops, const std::string& item, CodeWriter& w) {
  std::string rest = item;
  for (size_t k = loops.size(); k-- > 0;) {
    const Loop& l = loops[k];
    if (k == 0) {
      w.line("const int64_t " + l.var + " = " + rest + ";");
      break;
    }
    std::string ext = "(" + l.extent.to_c() + ")";
    w.line("const int64_t " + l.var + " = " + rest + " % " + ext + ";");
    w.line("const int64_t " + rest + "_" + l.var + " = " + rest + " / " + ext + ";");
    rest = rest + "_" + l.var;
  }
}

void CudaRenderer::open_output_loops(const Kernel& kernel, CodeWriter& w) const {
  std::string items = product([&] {
                        std::vector<Expr> e;
                        for (const Loop& l : kernel.loops) e.push_back(l.extent);
                        return e;
                      }())
                          .to_c();
  w.open("for (int64_t lm_i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; lm_i < " + items +
         "; lm_i += (int64_t)gridDim.x * blockDim.x)");
  emit_unravel(kernel.loops, "lm_i", w);
}

void CudaRenderer::close_output_loops(const Kernel& kernel, CodeWriter& w) const {
  (void)kernel;
  w.close();
}

CudaRenderer::Reduction CudaRenderer::reduction(const Kernel& kernel) const {
  const Value& red = kernel.values[kernel.reduce_at];
  return Reduction{red, kernel.reduce[0], compute_type(red.dtype), value_name(kernel.reduce_at),
                   value_name(red.args[0])};
}

void CudaRenderer::finish_reduction(const Kernel& kernel, CodeWriter& w) const {
  const Value& red = kernel.values[kernel.reduce_at];
  const std::string acc = value_name(kernel.reduce_at);
  if (red.dtype == DType::F16 || red.dtype == DType::BF16) {
    w.line(acc + " = " + round_to(red.dtype, acc) + ";");
  }
  emit_values(kernel, kernel.reduce_at + 1, static_cast<int>(kernel.values.size()), w);
}

std::string CudaRenderer::render_warp_kernel(const Program& program, const Kernel& kernel,
                                             KernelLaunch& launch) const {
  const auto [red, loop, t, acc, x] = reduction(kernel);
  const std::string& r = loop.var;
  CodeWriter w;
  w.line("/* " + kernel.name + ": writes " + buffer_name(kernel.out) +
         "; a warp per output, shuffle reduction */");
  open_kernel(program, kernel, launch.block, w);
  w.line("const int lm_lane = threadIdx.x & 31;");
  w.line("const int64_t lm_r_extent = " + loop.extent.to_c() + ";");
  w.open("for (int64_t lm_w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; lm_w < " +
         launch.items.to_c() + "; lm_w += ((int64_t)gridDim.x * blockDim.x) >> 5)");
  emit_unravel(kernel.loops, "lm_w", w);
  w.line(t + " " + acc + " = " + reduce_init(red) + ";");
  w.line("int64_t lm_r_done = 0;");
  std::vector<VectorLoad> vec = schedule_of(kernel).vector == 1 ? std::vector<VectorLoad>{}
                                                               : vector_loads(kernel);
  if (!vec.empty()) {
    int width = 8;
    for (const VectorLoad& v : vec) {
      if (dtype_size(kernel.values[v.value].dtype) == 4) width = 4;
    }
    std::string wd = std::to_string(width);
    std::string aligned = "lm_r_extent % " + wd + " == 0";
    for (const VectorLoad& v : vec) aligned += " && (" + v.base.to_c() + ") % " + wd + " == 0";
    w.open("if (" + aligned + ")");
    w.line("#pragma unroll 4");  // several 16-byte loads in flight per lane
    w.open("for (int64_t lm_rb = (int64_t)lm_lane * " + wd + "; lm_rb < lm_r_extent; lm_rb += " +
           std::to_string(32 * width) + ")");
    for (const VectorLoad& v : vec) {
      const Value& lv = kernel.values[v.value];
      size_t bytes = dtype_size(lv.dtype) * static_cast<size_t>(width);
      std::string raw = bytes == 16 ? "uint4" : "uint2";
      const std::string at = lv.index.substitute(r, Expr::symbol("lm_rb")).to_c();
      w.line("const " + raw + " lm_raw" + std::to_string(v.value) + " = *(const " +
             global_pointer(raw) + ")(" + buffer_name(lv.buffer) + " + (" + at + "));");
    }
    w.line("#pragma unroll");
    w.open("for (int lm_u = 0; lm_u < " + wd + "; lm_u++)");
    w.line("const int64_t " + r + " = lm_rb + lm_u;");
    w.line("(void)" + r + ";");
    std::set<std::string> bound;  // Gather symbols already declared in this scope
    for (int i = 0; i < kernel.reduce_at; ++i) {
      bool is_vec = false;
      for (const VectorLoad& v : vec) is_vec = is_vec || v.value == i;
      if (!is_vec) {
        emit_value(kernel, i, bound, w);
        continue;
      }
      const Value& lv = kernel.values[i];
      std::string raw = "((const " + local_pointer(storage_type(lv.dtype)) + ")&lm_raw" +
                        std::to_string(i) + ")[lm_u]";
      w.line(compute_type(lv.dtype) + " " + value_name(i) + " = " + to_compute(lv.dtype, raw) +
             ";");
    }
    w.line(acc + " = " + reduce_combine(red, acc, x) + ";");
    w.close();
    w.close();
    w.line("lm_r_done = lm_r_extent;");
    w.close();
  }
  w.open("for (int64_t " + r + " = lm_r_done + lm_lane; " + r + " < lm_r_extent; " + r +
         " += 32)");
  emit_values(kernel, 0, kernel.reduce_at, w);
  w.line(acc + " = " + reduce_combine(red, acc, x) + ";");
  w.close();
  w.line(acc + " = " + warp_reduce_fn(red) + "(" + acc + ");");
  finish_reduction(kernel, w);
  w.open("if (lm_lane == 0)");
  w.line(store_statement(kernel));
  w.close();
  w.close();
  w.close();
  return w.str();
}

std::string CudaRenderer::warp_reduce_fn(const Value& red) {
  if (red.op == OpKind::SumReduce) return is_float(red.dtype) ? "lm_warp_sum" : "lm_warp_isum";
  return is_float(red.dtype) ? "lm_warp_max" : "lm_warp_imax";
}

std::string CudaRenderer::render_split_kernel(const Program& program, const Kernel& kernel,
                                              KernelLaunch& launch) const {
  launch.block = 256;
  const auto [red, loop, t, acc, x] = reduction(kernel);
  const std::string& r = loop.var;
  const std::string items = launch.items.to_c();
  CodeWriter w;
  w.line("/* " + kernel.name + ": writes " + buffer_name(kernel.out) +
         "; 32 outputs per block, 8 warps split the reduction */");
  open_kernel(program, kernel, 256, w);
  w.line(shared(t + " lm_part[8][33];"));
  w.line("const int lm_lane = threadIdx.x & 31, lm_warp = threadIdx.x >> 5;");
  w.line("const int64_t lm_r_extent = " + loop.extent.to_c() + ";");
  w.open("for (int64_t lm_base = (int64_t)blockIdx.x * 32; lm_base < " + items +
         "; lm_base += (int64_t)gridDim.x * 32)");
  w.line("const int64_t lm_o = lm_base + lm_lane;");
  w.line(t + " " + acc + " = " + reduce_init(red) + ";");
  w.open("if (lm_o < " + items + ")");
  emit_unravel(kernel.loops, "lm_o", w);
  w.open("for (int64_t " + r + " = lm_warp; " + r + " < lm_r_extent; " + r + " += 8)");
  emit_values(kernel, 0, kernel.reduce_at, w);
  w.line(acc + " = " + reduce_combine(red, acc, x) + ";");
  w.close();
  w.close();
  w.line("lm_part[lm_warp][lm_lane] = " + acc + ";");
  w.line(barrier());
  w.open("if (lm_warp == 0 && lm_o < " + items + ")");
  emit_unravel(kernel.loops, "lm_o", w);
  w.line(acc + " = lm_part[0][lm_lane];");
  w.line("for (int lm_w = 1; lm_w < 8; lm_w++) " + acc + " = " +
         reduce_combine(red, acc, "lm_part[lm_w][lm_lane]") + ";");
  finish_reduction(kernel, w);
  w.line(store_statement(kernel));
  w.close();
  w.line(barrier());
  w.close();
  w.close();
  return w.str();
}

CudaRenderer::Mapping CudaRenderer::choose(const Kernel& kernel) const {
  const CudaSchedule s = schedule_of(kernel);
  const MatmulInfo& mm = kernel.matmul;
  // quantized B, an A the kernel computes (kernel/prologue.h) or a B it gathers
  // (kernel/window.h): the generic loop nest
  if (mm.present && !is_quantized(mm.b_stored) && !mm.a_computed && !mm.b_window) {
    const Expr& m = kernel.loops[mm.m_loop].extent;
    bool small_m = m.try_const() && *m.try_const() < 16;
    // Tensor cores take two half operands; one widened to f32 in the body makes an f32 product.
    bool halves = mm.dtype == DType::F16 || mm.dtype == DType::BF16;
    // The GEMV streams the rows of W: b contiguous along k.
    bool gemv_fits = is_one(mm.b_k);
    int want = s.matmul == 4 && !gemv_fits ? 0 : s.matmul;
    if (want == 0) want = small_m ? (gemv_fits ? 4 : 1) : (halves && sm_ >= 80 ? 3 : 2);
    if (want == 4) return Mapping::kGemv;
    if (want == 3 && matrix_units(mm)) return Mapping::kMmaMatmul;
    if (want == 2 || want == 3) return Mapping::kTiledMatmul;
  }
  if (kernel.reduce_at < 0) return Mapping::kThreadPerItem;
  if (s.reduce == 1) return Mapping::kThreadPerItem;
  if (s.reduce == 2) return Mapping::kWarpReduce;
  if (s.reduce == 3) return Mapping::kSplitReduce;
  // Automatic: a warp per output when some operand is contiguous along the reduction (the
  // lanes' reads coalesce), no operand is strided along it but contiguous across outputs
  // (those coalesce across threads instead), and the reduction is not tiny.
  const Expr& extent = kernel.reduce[0].extent;
  if (extent.try_const() && *extent.try_const() < 32) return Mapping::kThreadPerItem;
  const std::string& r = kernel.reduce[0].var;
  const std::string inner = kernel.loops.empty() ? "" : kernel.loops.back().var;
  bool along_r = false;
  for (int i = 0; i < kernel.reduce_at; ++i) {
    const Value& v = kernel.values[i];
    if (v.kind != ValueKind::kLoad) continue;
    auto s = affine_stride(v.index, r);
    if (s && is_const(*s, 1)) {
      along_r = true;
      continue;
    }
    auto across = inner.empty() ? std::nullopt : affine_stride(v.index, inner);
    bool strided = !s || !is_const(*s, 0);
    if (strided && across && is_const(*across, 1)) {
      // Coalesced across outputs: lanes take outputs; long reductions split over warps.
      bool long_r = !extent.try_const() || *extent.try_const() >= 64;
      return long_r ? Mapping::kSplitReduce : Mapping::kThreadPerItem;
    }
  }
  return along_r ? Mapping::kWarpReduce : Mapping::kThreadPerItem;
}

std::string CudaRenderer::render_mapped(const Program& program, const Kernel& k,
                                        KernelLaunch& launch) const {
  std::vector<Expr> extents;
  for (const Loop& l : k.loops) extents.push_back(l.extent);
  launch.name = k.name;
  launch.block = block(k);
  launch.items = product(extents);
  if (k.attention.present) return render_attention_kernel(program, k, launch);
  if (k.row.present) return render_row_kernel(program, k, launch);
  switch (choose(k)) {
    case Mapping::kTiledMatmul:
      return render_tiled_matmul(program, k, launch);
    case Mapping::kMmaMatmul:
      return render_mma_matmul(program, k, launch);
    case Mapping::kGemv:
      return render_gemv(program, k, launch);
    case Mapping::kWarpReduce:
      launch.mode = LaunchMode::kWarpPerItem;
      return render_warp_kernel(program, k, launch);
    case Mapping::kSplitReduce:
      launch.mode = LaunchMode::kSplitReduce;
      return render_split_kernel(program, k, launch);
    case Mapping::kThreadPerItem:
      break;
  }
  launch.mode = LaunchMode::kThreadPerItem;
  return render_kernel(program, k);
}

CudaSource CudaRenderer::render_program(const Program& program, bool with_prelude) const {
  CudaSource out;
  std::string& s = out.source;
  if (with_prelude) {
    s = "/* Generated by luminal for CUDA (sm_" + std::to_string(sm_) +
        "). Deterministic: same program, same text. */\n";
    s += prelude(program);
  }
  std::map<std::string, std::string> seen;  // canonical form's text -> the kernel emitted for it
  for (const Kernel& k : program.kernels) {
    KernelLaunch launch;
    std::string text = render_mapped(program, k, launch);
    // Identical kernels (up to buffer names) are emitted once; launches reuse the first.
    Program alone = canonical_kernel(program, k);
    KernelLaunch unused;
    auto [it, fresh] = seen.emplace(render_mapped(alone, alone.kernels[0], unused), k.name);
    if (fresh) {
      s += "\n" + text;
    } else {
      launch.name = it->second;
    }
    out.launches.push_back(launch);
  }
  return out;
}

}  // namespace luminal
