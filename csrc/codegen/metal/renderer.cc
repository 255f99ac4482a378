// The Metal renderer: the MSL prelude (the C-like helpers with as_type bit casts, the
// simdgroup shuffles under the CUDA mappings' names), kernel signatures with the calling
// convention of metal/renderer.h, MSL's spellings of math and the index fault, and the program
// as one library. The thread mappings themselves are the CUDA renderer's (cuda/*.cc).
#include "codegen/metal/renderer.h"

#include <cctype>

#include "core/errors.h"

namespace luminal {

std::string MetalRenderer::type_prelude() const {
  // <metal_stdlib> declares int64_t, int32_t, uint32_t, uint16_t and uint8_t (MSL 2.3 on).
  return "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\nusing namespace metal;\n";
}

std::string MetalRenderer::bit_cast_helpers() const {
  std::string q = helper_qualifiers() + " ";
  return q + "uint32_t lm_bits(float f) { return as_type<uint32_t>(f); }\n" + q +
         "float lm_float(uint32_t u) { return as_type<float>(u); }\n";
}

std::string MetalRenderer::prelude(const Program& program) const {
  std::string q = helper_qualifiers() + " ";
  std::string s = CLikeRenderer::prelude(program);
  // The CUDA mappings' warp reductions: butterflies of simd_shuffle_xor (every lane gets the
  // result; a float max propagates NaN, which simd_max does not promise).
  s += "/* Simdgroup-wide reductions with butterfly shuffles: every lane gets the result. */\n";
  s += q + "float lm_warp_sum(float x) {\n"
           "  for (ushort o = 16; o > 0; o >>= 1) x += simd_shuffle_xor(x, o);\n"
           "  return x;\n"
           "}\n";
  s += q + "int32_t lm_warp_isum(int32_t x) {\n"
           "  for (ushort o = 16; o > 0; o >>= 1) {\n"
           "    x = (int32_t)((uint32_t)x + (uint32_t)simd_shuffle_xor(x, o));\n"
           "  }\n"
           "  return x;\n"
           "}\n";
  s += q + "float lm_warp_max(float x) {\n"
           "  for (ushort o = 16; o > 0; o >>= 1) x = lm_fmax_nan(x, simd_shuffle_xor(x, o));\n"
           "  return x;\n"
           "}\n";
  s += q + "int32_t lm_warp_imax(int32_t x) {\n"
           "  for (ushort o = 16; o > 0; o >>= 1) {\n"
           "    int32_t y = simd_shuffle_xor(x, o);\n"
           "    x = y > x ? y : x;\n"
           "  }\n"
           "  return x;\n"
           "}\n";
  return s;
}

std::string MetalRenderer::index_fault(const std::string& zero) const {
  return "(atomic_store_explicit(" + std::string(kIndexFault) +
         ", 1, memory_order_relaxed), " + zero + ")";
}

namespace {
// C's float math functions in `c` (ir/ops.def's spellings: exp2f, fmodf) as MSL spells them,
// overloaded, without the f: every call of a lowercase name without '_' that ends in f.
std::string msl_math(const std::string& c) {
  std::string out;
  size_t start = std::string::npos;  // of the identifier being read
  for (size_t i = 0; i < c.size(); ++i) {
    const char ch = c[i];
    const bool word = std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    if (word && start == std::string::npos) start = i;
    if (!word && start != std::string::npos) {
      std::string name = c.substr(start, i - start);
      bool c_float = ch == '(' && name.size() > 1 && name.back() == 'f' &&
                     std::islower(static_cast<unsigned char>(name[0])) &&
                     name.find('_') == std::string::npos;
      out += c_float ? name.substr(0, name.size() - 1) : name;
      start = std::string::npos;
    }
    if (!word) out += ch;
  }
  if (start != std::string::npos) out += c.substr(start);
  return out;
}
}  // namespace

std::string MetalRenderer::math_call(OpKind op, const std::string& x) const {
  return msl_math(CLikeRenderer::math_call(op, x));
}

std::string MetalRenderer::binary_expr(const Value& v, const std::string& a,
                                       const std::string& b) const {
  return msl_math(CLikeRenderer::binary_expr(v, a, b));
}

std::string MetalRenderer::signature(const Program& program, const Kernel& kernel,
                                     int block) const {
  (void)block;  // the runtime checks it against the pipeline's maximum
  std::vector<std::string> params;
  int slot = 0;
  auto bind = [&](const std::string& decl) {
    params.push_back(decl + " [[buffer(" + std::to_string(slot++) + ")]]");
  };
  bind("device " + storage_type(program.buffers[kernel.out].dtype) + "* " +
       buffer_name(kernel.out));
  for (BufferId b : kernel.reads()) {
    bind("const device " + storage_type(program.buffers[b].dtype) + "* " + buffer_name(b));
  }
  bind("constant int64_t* lm_dims");
  bind("device atomic_int* " + std::string(kIndexFault));
  if (slot > kMaxBufferArguments) {
    throw CompileError("Metal: kernel " + kernel.name + " binds " + std::to_string(slot) +
                       " buffers, past the " + std::to_string(kMaxBufferArguments) +
                       " of a Metal argument table");
  }
  params.push_back("uint3 threadIdx [[thread_position_in_threadgroup]]");
  params.push_back("uint3 blockIdx [[threadgroup_position_in_grid]]");
  params.push_back("uint3 blockDim [[threads_per_threadgroup]]");
  params.push_back("uint3 gridDim [[threadgroups_per_grid]]");
  std::string s = "kernel void " + kernel.name + "(";
  for (size_t i = 0; i < params.size(); ++i) s += (i ? ", " : "") + params[i];
  return s + ")";
}

std::string MetalRenderer::kernel_prologue(const Program& program) const {
  std::string s;
  for (size_t k = 0; k < program.dims.size(); ++k) {
    s += (k ? ", " : "const int64_t ") + dim_name(k) + " = lm_dims[" + std::to_string(k) + "]";
  }
  return s.empty() ? s : s + ";";
}

MetalSource MetalRenderer::render_program(const Program& program) const {
  CudaSource cuda = CudaRenderer::render_program(program, false);
  MetalSource out;
  out.source = "/* Generated by luminal for Metal. Deterministic: same program, same text. */\n" +
               prelude(program) + cuda.source;
  out.launches = std::move(cuda.launches);
  return out;
}

}  // namespace luminal
