// Compiles a split C program (codegen/c/renderer.h) with the system compiler: each kernel unit
// to an object file cached on disk under a key of its source + compiler identity + flags + CPU
// (missing ones compiled in parallel), then the driver and the objects linked into a shared
// object cached under the key of the whole set. Cache writes are atomic (temp file + rename),
// so processes compiling the same program at once all succeed; a cached object or shared
// object that is damaged is rebuilt, never trusted. The flags live here and only here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/c/renderer.h"

namespace luminal {

// Options of the CPU runtime, all from Python (C++ reads no environment).
struct CpuOptions {
  std::string compiler = "cc";            // a program name on PATH, or a path
  std::vector<std::string> extra_flags;   // appended after the standard flags
  std::string cache_dir;                  // where sources and objects live; required
  int threads = 1;                        // OpenMP threads per kernel
  int compile_jobs = 0;                   // compiler processes at once; 0: online CPUs
  int vector_width = 0;                   // floats per vector the kernels are built for, 8 or
                                          // 16; 0: the machine's (cpu_native_vector_width)
  bool dot_products = true;  // the machine's dot-product instructions where it has them
                             // (AVX512-BF16, VNNI); false: none, the kernels' AVX2 paths
};

// `requested` (CpuOptions::vector_width), or the machine's where it is 0.
int64_t cpu_vector_width(int requested);

// The flags every compile and link uses (before CpuOptions::extra_flags) for kernels of
// `vector_width`-float vectors (cpu_vector_width); an object's compile adds -c, the link -shared.
std::vector<std::string> cpu_compile_flags(int64_t vector_width, bool dot_products = true);
// The link's flags, which compile the driver: cpu_compile_flags at -O0. The driver only calls
// the kernels in order, so optimizing it buys nothing, and its compile grows with the program
// (a 16-layer model's driver took longer at -O3 than any of its kernels).
std::vector<std::string> cpu_link_flags(int64_t vector_width, bool dot_products = true);

// What one load_program did.
struct CompileStats {
  int kernels = 0;           // distinct units of the program: kernels and their helpers
  int objects_compiled = 0;  // kernel objects compiled by this load (the others were cached)
  bool linked = false;       // false: the program's shared object came from the cache
  double seconds = 0;        // wall time of the load
};

// A loaded program: the dlopen handle and its entry point.
struct LoadedProgram {
  void* handle = nullptr;
  // seconds: null, or one slot per kernel for the time each took, measured with now().
  void (*run)(void** buffers, const int64_t* dims, int threads, double* seconds,
              double (*now)(void)) = nullptr;
  // Kernel k alone, the kernels before it having run (the search's kernel-by-kernel check).
  void (*step)(int k, void** buffers, const int64_t* dims, int threads) = nullptr;
  // The program's index fault flag (codegen kIndexFault), or null where no kernel reads a
  // bound index: 0 before a run, non-zero after one whose Gather read out of range.
  int32_t* index_fault = nullptr;
  std::string object_path;  // the cached .so
  std::string source_path;  // the saved driver source (kernel sources sit beside it)
  bool compiled = false;    // false when the cache had the whole program
  CompileStats stats;
};

// Compiles what the cache lacks and loads `program`. Throws CompileError with the compiler's
// message and the path of the saved source when a compile or the link fails.
LoadedProgram load_program(const CSplitProgram& program, const CpuOptions& options);

// Compiles the kernel objects of `program` the cache lacks, and nothing else (no link, no
// load): the search compiles its candidates' kernels ahead, beside its other work. Returns
// how many it compiled. Throws as load_program does.
int compile_kernel_objects(const CSplitProgram& program, const CpuOptions& options);

// Closes a handle from load_program (no-op for null).
void unload_program(LoadedProgram& program);

}  // namespace luminal
