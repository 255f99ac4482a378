// Compiles generated C into a shared object with the system compiler and caches it on disk
// under a key of source + compiler identity + flags + CPU. Cache writes are atomic (temp file
// + rename), so processes compiling the same program at once all succeed; a cached object that
// fails to load is rebuilt. The flags live here and only here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace luminal {

// Options of the CPU runtime, all from Python (C++ reads no environment).
struct CpuOptions {
  std::string compiler = "cc";            // a program name on PATH, or a path
  std::vector<std::string> extra_flags;   // appended after the standard flags
  std::string cache_dir;                  // where sources and objects live; required
  int threads = 1;                        // OpenMP threads per kernel
};

// The flags every compile uses (before CpuOptions::extra_flags).
const std::vector<std::string>& cpu_compile_flags();

// A loaded program: the dlopen handle and its entry point.
struct LoadedProgram {
  void* handle = nullptr;
  // seconds: null, or one slot per kernel for the time each took, measured with now().
  void (*run)(void** buffers, const int64_t* dims, int threads, double* seconds,
              double (*now)(void)) = nullptr;
  std::string object_path;  // the cached .so
  std::string source_path;  // the saved generated source
  bool compiled = false;    // false when the cache had it
};

// Compiles (or finds in the cache) and loads `source`. Throws CompileError with the compiler's
// message and the path of the saved source when compiling fails.
LoadedProgram load_program(const std::string& source, const CpuOptions& options);

// Closes a handle from load_program (no-op for null).
void unload_program(LoadedProgram& program);

}  // namespace luminal
