// CRenderer: LLIR as one C translation unit for the system compiler. No #include: integer
// types are typedefs and libm functions are declared directly. Output loops run under OpenMP;
// float reductions keep 8 partial accumulators so they vectorize; matmul-shaped kernels get a
// register-blocked micro-kernel (c_matmul.cc). The entry is
//   void lm_run(void** buffers, const int64_t* dims, int threads).
#pragma once

#include "codegen/c_like.h"

namespace luminal {

// Vector typedefs and micro-kernels for the program's matmul kernels ("" if none).
std::string matmul_prelude(const Program& program);

class CRenderer : public CLikeRenderer {
 protected:
  std::string prelude(const Program& program) const override;
  std::string kernel_signature(const Program& program, const Kernel& kernel) const override;
  int reduce_lanes(const Kernel& kernel) const override;
  void open_output_loops(const Kernel& kernel, CodeWriter& w) const override;
  std::string program_entry(const Program& program) const override;
  bool render_matmul(const Program& program, const Kernel& kernel, CodeWriter& w) const override;
  std::string math_call(OpKind op, const std::string& x) const override;
};

}  // namespace luminal
