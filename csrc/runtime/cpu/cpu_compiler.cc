// The compile cache. Keys: a kernel object is a hash of (its unit's source, toolchain); the
// program's shared object a hash of (the driver's source, its objects' keys, the link flags,
// toolchain); the toolchain is the compiler's identity (real path, size and mtime: no process
// is started on a cache hit; Python resolves a bare name on PATH first), the flags and the CPU
// model and flags. Compiler processes run through process_pool (posix_spawn, output captured).
#include "runtime/cpu/cpu_compiler.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "codegen/c_like.h"
#include "codegen/c/schedule.h"
#include "core/errors.h"
#include "runtime/disk_cache.h"
#include "runtime/cpu/process_pool.h"

namespace luminal {

int64_t cpu_vector_width(int requested) {
  return requested > 0 ? requested : cpu_native_vector_width();
}

std::vector<std::string> cpu_compile_flags(int64_t vector_width, bool dot_products) {
  // With AVX-512 the loops GCC vectorizes on its own (elementwise, reductions, row kernels)
  // take 512-bit vectors too, as the matmul blocks do (its default for -march=native is 256).
  std::vector<std::string> flags = {"-O3", "-march=native", "-fopenmp", "-fPIC",
                                    "-fno-math-errno", "-fno-trapping-math"};
  if (vector_width == 16) flags.push_back("-mprefer-vector-width=512");
  // Without dot products the kernels take their AVX2 paths, as on a machine without them.
  if (!dot_products) {
    for (const char* f : {"-mno-avx512vnni", "-mno-avxvnni", "-mno-avx512bf16"}) {
      flags.push_back(f);
    }
  }
  return flags;
}

std::vector<std::string> cpu_link_flags(int64_t vector_width, bool dot_products) {
  std::vector<std::string> flags = cpu_compile_flags(vector_width, dot_products);
  std::replace(flags.begin(), flags.end(), std::string("-O3"), std::string("-O0"));
  return flags;
}

namespace {

std::string compiler_identity(const std::string& compiler) {
  char real[4096];
  std::string resolved = realpath(compiler.c_str(), real) ? real : compiler;
  struct stat st;
  if (stat(resolved.c_str(), &st) != 0) {
    throw CompileError("cpu runtime: compiler '" + compiler + "' was not found (give a path or "
                       "a program on PATH)");
  }
  return resolved + " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtime);
}

std::string cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::string model;
  std::string flags;
  while (std::getline(in, line)) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
    if (!model.empty() && !flags.empty()) break;
  }
  return model + "\n" + flags;
}

// One kernel unit's entries in the cache.
struct ObjectEntry {
  const CUnit* unit = nullptr;
  std::string key;
  std::string source_path;  // <key>.c, written only when it is compiled
  std::string object_path;  // <key>.o
};

uint64_t read_uint(const unsigned char* p, int bytes, bool little) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    int at = little ? bytes - 1 - i : i;
    v = (v << 8) | p[at];
  }
  return v;
}

// Whether `path` holds a whole object file: an ELF whose section headers lie inside the file,
// or a Mach-O. Anything else (missing, truncated, garbage) gets compiled again.
bool looks_like_object(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return false;
  uint64_t size = static_cast<uint64_t>(st.st_size);
  unsigned char h[64] = {0};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(h), sizeof h);
  if (in.gcount() < 52) return false;
  if (h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F') {
    bool is64 = h[4] == 2;
    bool little = h[5] == 1;
    if (is64 && in.gcount() < 64) return false;
    uint64_t shoff = is64 ? read_uint(h + 0x28, 8, little) : read_uint(h + 0x20, 4, little);
    uint64_t shentsize = read_uint(h + (is64 ? 0x3a : 0x2e), 2, little);
    uint64_t shnum = read_uint(h + (is64 ? 0x3c : 0x30), 2, little);
    return shnum > 0 && shentsize > 0 && shoff <= size && shnum * shentsize <= size - shoff;
  }
  uint32_t magic = static_cast<uint32_t>(read_uint(h, 4, true));
  return magic == 0xfeedfacfu || magic == 0xcffaedfeu;  // Mach-O 64, either byte order
}

std::string failure(const std::string& what, const std::string& compiler,
                    const CommandResult& r, const std::string& source_path) {
  std::string why = r.exit_code < 0 ? "could not be run"
                                    : "failed with exit code " + std::to_string(r.exit_code);
  return "cpu runtime: " + what + " with '" + compiler + "' " + why + " (generated source: " +
         source_path + ")" + (r.output.empty() ? "" : ":\n" + r.output);
}

void write_or_throw(const std::string& path, const std::string& text) {
  if (!write_file_atomic(path, text)) {
    throw CompileError("cpu runtime: cannot write " + path + ": " + std::strerror(errno));
  }
}

// Compiles `todo` into their object files, at most `jobs` compilers at once, largest source
// first (the long compiles start early). Every success is cached; then the first failure (in
// that order) throws.
void compile_objects(std::vector<ObjectEntry*> todo, const std::string& compiler,
                     const std::vector<std::string>& flags, int jobs, const std::string& dir) {
  std::stable_sort(todo.begin(), todo.end(), [](const ObjectEntry* a, const ObjectEntry* b) {
    return a->unit->source.size() > b->unit->source.size();
  });
  std::vector<std::vector<std::string>> commands;
  std::vector<std::string> temps;
  for (const ObjectEntry* e : todo) {
    write_or_throw(e->source_path, e->unit->source);
    temps.push_back(temp_path(e->object_path));
    std::vector<std::string> argv = {compiler};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"-c", "-o", temps.back(), e->source_path});
    commands.push_back(std::move(argv));
  }
  std::vector<CommandResult> results = run_commands(commands, jobs, temp_path(dir + "/cc"));
  std::string error;
  for (size_t i = 0; i < todo.size(); ++i) {
    if (results[i].exit_code != 0) {
      std::remove(temps[i].c_str());
      if (error.empty()) {
        error = failure("compiling kernel " + todo[i]->unit->name, compiler, results[i],
                        todo[i]->source_path);
      }
    } else if (!rename_into_place(temps[i], todo[i]->object_path) && error.empty()) {
      error = "cpu runtime: cannot rename " + temps[i] + " to " + todo[i]->object_path + ": " +
              std::strerror(errno);
    } else {
      write_seal(todo[i]->object_path, todo[i]->key);  // unsealed: compiled again next time
    }
  }
  if (!error.empty()) throw CompileError(error);
}

// Keeps the OpenMP runtime a program loaded for the life of the process: closing the last
// program must not unmap libgomp (or LLVM's libomp) under its idle worker threads.
void pin_openmp_runtime() {
  for (const char* name : {"libgomp.so.1", "libomp.so", "libomp.so.5", "libiomp5.so"}) {
    dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);  // null where it is not loaded
  }
}

bool try_load(const std::string& object_path, LoadedProgram& out) {
  void* handle = dlopen(object_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return false;
  pin_openmp_runtime();
  void* sym = dlsym(handle, "lm_run");
  void* step = dlsym(handle, "lm_step");
  if (!sym || !step) {
    dlclose(handle);
    return false;
  }
  out.handle = handle;
  out.run = reinterpret_cast<decltype(out.run)>(sym);
  out.step = reinterpret_cast<decltype(out.step)>(step);
  out.index_fault = static_cast<int32_t*>(dlsym(handle, kIndexFault));
  return true;
}

// Compiles the driver, links it with the objects into out.object_path and loads it; the error
// message, or "" once loaded.
std::string link_and_load(const std::vector<ObjectEntry>& objects, const std::string& compiler,
                          const std::vector<std::string>& flags, const std::string& key,
                          LoadedProgram& out) {
  std::string tmp = temp_path(out.object_path);
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-shared", "-o", tmp, out.source_path});
  for (const ObjectEntry& e : objects) argv.push_back(e.object_path);
  argv.push_back("-lm");
  CommandResult r = run_commands({argv}, 1, tmp)[0];
  if (r.exit_code != 0) {
    std::remove(tmp.c_str());
    return failure("linking the program", compiler, r, out.source_path);
  }
  if (!rename_into_place(tmp, out.object_path)) {
    return "cpu runtime: cannot rename " + tmp + " to " + out.object_path + ": " +
           std::strerror(errno);
  }
  write_seal(out.object_path, key);  // unsealed: linked again next time
  if (!try_load(out.object_path, out)) {
    const char* why = dlerror();
    return "cpu runtime: cannot load " + out.object_path + ": " + (why ? why : "no lm_run");
  }
  return "";
}

// What one program's compile and link read: the flags, the toolchain's identity, the cache
// directory (made) and each unit's entry in it.
struct ProgramObjects {
  std::vector<std::string> flags, link_flags;
  std::string toolchain;
  std::vector<ObjectEntry> objects;
  int jobs = 1;
};

ProgramObjects program_objects(const CSplitProgram& program, const CpuOptions& options) {
  const std::string& dir = options.cache_dir;
  if (dir.empty()) throw CompileError("cpu runtime: no cache directory given");
  ProgramObjects po;
  const int64_t width = cpu_vector_width(options.vector_width);
  po.flags = cpu_compile_flags(width, options.dot_products);
  po.flags.insert(po.flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  po.link_flags = cpu_link_flags(width, options.dot_products);
  po.link_flags.insert(po.link_flags.end(), options.extra_flags.begin(),
                       options.extra_flags.end());
  po.toolchain = compiler_identity(options.compiler) + "\n";
  for (const std::string& f : po.flags) po.toolchain += f + " ";
  po.toolchain += "\n" + cpu_identity();
  if (!make_dirs(dir)) {
    throw CompileError("cpu runtime: cannot create cache directory " + dir + ": " +
                       std::strerror(errno));
  }
  std::vector<const CUnit*> units;
  for (const CUnit& u : program.kernels) units.push_back(&u);
  for (const CUnit& u : program.helpers) units.push_back(&u);
  for (const CUnit* unit : units) {
    ObjectEntry e;
    e.unit = unit;
    e.key = hex128("object\n" + unit->source + "\n" + po.toolchain);
    e.source_path = dir + "/" + e.key + ".c";
    e.object_path = dir + "/" + e.key + ".o";
    po.objects.push_back(std::move(e));
  }
  po.jobs = options.compile_jobs > 0 ? options.compile_jobs
                                     : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  po.jobs = std::max(po.jobs, 1);
  return po;
}

// The entries whose object the cache lacks (or holds damaged).
std::vector<ObjectEntry*> missing_objects(ProgramObjects& po) {
  std::vector<ObjectEntry*> missing;
  for (ObjectEntry& e : po.objects) {
    bool sealed = read_sealed(e.object_path, e.key).has_value();
    if (!sealed || !looks_like_object(e.object_path)) missing.push_back(&e);
  }
  return missing;
}

}  // namespace

int compile_kernel_objects(const CSplitProgram& program, const CpuOptions& options) {
  ProgramObjects po = program_objects(program, options);
  std::vector<ObjectEntry*> missing = missing_objects(po);
  compile_objects(missing, options.compiler, po.flags, po.jobs, options.cache_dir);
  return static_cast<int>(missing.size());
}

LoadedProgram load_program(const CSplitProgram& program, const CpuOptions& options) {
  auto start = std::chrono::steady_clock::now();
  ProgramObjects po = program_objects(program, options);
  std::vector<ObjectEntry>& objects = po.objects;
  std::string program_text = "program\n" + program.driver.source + "\n";
  for (const ObjectEntry& e : objects) program_text += e.key + "\n";
  for (const std::string& f : po.link_flags) program_text += f + " ";
  std::string key = hex128(program_text + po.toolchain);
  LoadedProgram out;
  out.source_path = options.cache_dir + "/" + key + ".c";
  out.object_path = options.cache_dir + "/" + key + ".so";
  out.stats.kernels = static_cast<int>(objects.size());
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // dlopen of a truncated file can kill the process (SIGBUS): only a sealed one is opened.
  if (read_sealed(out.object_path, key) && try_load(out.object_path, out)) {
    out.stats.seconds = seconds();
    return out;
  }
  // Missing or unloadable (damaged): compile what the cache lacks, then link.
  std::vector<ObjectEntry*> missing = missing_objects(po);
  compile_objects(missing, options.compiler, po.flags, po.jobs, options.cache_dir);
  out.stats.objects_compiled = static_cast<int>(missing.size());
  write_or_throw(out.source_path, program.driver.source);
  std::string error = link_and_load(objects, options.compiler, po.link_flags, key, out);
  if (!error.empty() && missing.size() < objects.size()) {
    // A cached object may be damaged in a way the header check cannot see: rebuild them all.
    std::vector<ObjectEntry*> all;
    for (ObjectEntry& e : objects) all.push_back(&e);
    compile_objects(all, options.compiler, po.flags, po.jobs, options.cache_dir);
    out.stats.objects_compiled = static_cast<int>(all.size());
    error = link_and_load(objects, options.compiler, po.link_flags, key, out);
  }
  if (!error.empty()) throw CompileError(error);
  out.compiled = true;
  out.stats.linked = true;
  out.stats.seconds = seconds();
  return out;
}

void unload_program(LoadedProgram& program) {
  if (program.handle) dlclose(program.handle);
  program.handle = nullptr;
  program.run = nullptr;
  program.step = nullptr;
  program.index_fault = nullptr;
}

}  // namespace luminal
