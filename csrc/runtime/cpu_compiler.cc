// The compile cache: key = FNV-1a of (source, compiler identity, flags, CPU model and flags).
// The compiler identity is its real path, size and mtime (no process is started on a cache
// hit); Python resolves a bare name on PATH before it gets here. The compiler runs through posix_spawn with its output captured to a log file.
#include "runtime/cpu_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/errors.h"
#include "runtime/disk_cache.h"

extern char** environ;

namespace luminal {

const std::vector<std::string>& cpu_compile_flags() {
  static const std::vector<std::string> kFlags = {
      "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-fno-math-errno",
      "-fno-trapping-math"};
  return kFlags;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string compiler_identity(const std::string& compiler) {
  const std::string& path = compiler;
  char real[4096];
  std::string resolved = realpath(path.c_str(), real) ? real : path;
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

void make_cache_dir(const std::string& dir) {
  if (!make_dirs(dir)) {
    throw CompileError("cpu runtime: cannot create cache directory " + dir + ": " +
                       std::strerror(errno));
  }
}

// A file name unique to this process and call, next to `path`.
std::string temp_name(const std::string& path) {
  static_assert(sizeof(pid_t) <= 8, "pid fits");
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp.%d.%p", static_cast<int>(getpid()),
                static_cast<const void*>(&buf));
  return path + buf;
}

void write_atomic(const std::string& path, const std::string& text) {
  std::string tmp = temp_name(path);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw CompileError("cpu runtime: cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CompileError("cpu runtime: cannot rename " + tmp + " to " + path);
  }
}

// Runs argv with stdout and stderr into `log`; returns the exit status (-1: not started).
int run_process(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void compile_object(const std::string& compiler, const std::vector<std::string>& flags,
                    const std::string& source_path, const std::string& object_path) {
  std::string tmp = temp_name(object_path);
  std::string log = tmp + ".log";
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", tmp, source_path, "-lm"});
  int rc = run_process(argv, log);
  std::string message = read_file(log);
  std::remove(log.c_str());
  if (rc != 0) {
    std::remove(tmp.c_str());
    std::string why = rc < 0 ? "could not be run" : "failed with exit code " + std::to_string(rc);
    throw CompileError("cpu runtime: compiler '" + compiler + "' " + why +
                       " (generated source: " + source_path + ")" +
                       (message.empty() ? "" : ":\n" + message));
  }
  if (std::rename(tmp.c_str(), object_path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CompileError("cpu runtime: cannot rename " + tmp + " to " + object_path);
  }
}

bool try_load(const std::string& object_path, LoadedProgram& out) {
  void* handle = dlopen(object_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return false;
  void* sym = dlsym(handle, "lm_run");
  if (!sym) {
    dlclose(handle);
    return false;
  }
  out.handle = handle;
  out.run = reinterpret_cast<decltype(out.run)>(sym);
  return true;
}

}  // namespace

LoadedProgram load_program(const std::string& source, const CpuOptions& options) {
  if (options.cache_dir.empty()) throw CompileError("cpu runtime: no cache directory given");
  std::vector<std::string> flags = cpu_compile_flags();
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  std::string key_text = source + "\n" + compiler_identity(options.compiler) + "\n";
  for (const std::string& f : flags) key_text += f + " ";
  key_text += "\n" + cpu_identity();
  std::string key = hex64(fnv1a(key_text)) + hex64(fnv1a(key_text, 0x84222325cbf29ce4ULL));
  make_cache_dir(options.cache_dir);
  LoadedProgram out;
  out.source_path = options.cache_dir + "/" + key + ".c";
  out.object_path = options.cache_dir + "/" + key + ".so";
  struct stat st;
  if (stat(out.object_path.c_str(), &st) == 0 && try_load(out.object_path, out)) return out;
  // Missing or unloadable (corrupt): write the source and compile it afresh.
  write_atomic(out.source_path, source);
  compile_object(options.compiler, flags, out.source_path, out.object_path);
  out.compiled = true;
  if (!try_load(out.object_path, out)) {
    throw CompileError("cpu runtime: cannot load " + out.object_path + ": " + dlerror());
  }
  return out;
}

void unload_program(LoadedProgram& program) {
  if (program.handle) dlclose(program.handle);
  program.handle = nullptr;
  program.run = nullptr;
}

}  // namespace luminal
