// A kernel's identity up to buffer names: the kernel alone in a program, its buffers
// renumbered from 0 (its output, then its reads in order) and its name a placeholder. Two
// kernels that differ only in which buffers they touch (the layers of a model) have the same
// canonical form, so they render to the same text; renderers name, cache and dedup kernels by
// that text. Not a hash and not a renderer: callers render the form and compare or hash it.
#pragma once

#include "kernel/kernel.h"

namespace luminal {

// The name of the kernel in a canonical form.
constexpr const char* kCanonicalKernelName = "lm_kernel";

// `kernel` of `program` in its canonical form: a program of the program's dims, its buffers
// (copies of the kernel's output, then of its reads, the order of Kernel::reads, so call sites
// pass them in the same order) and the kernel named kCanonicalKernelName.
Program canonical_kernel(const Program& program, const Kernel& kernel);

}  // namespace luminal
