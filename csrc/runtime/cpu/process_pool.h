// Runs commands as child processes (posix_spawn, PATH lookup, no shell), at most N at once,
// each with stdout and stderr captured. Waits only for the children it started, so it never
// reaps another part of the process's children. Used by cpu_compiler for parallel compiles.
#pragma once

#include <string>
#include <vector>

namespace luminal {

struct CommandResult {
  int exit_code = -1;  // -1: could not be started, or ended by a signal
  std::string output;  // stdout and stderr together
};

// Runs every command (argv[0] a path or a program on PATH), at most `max_parallel` at once;
// `log_prefix` + ".<i>.log" holds command i's output while it runs (removed afterwards).
// Results are in the order of `commands`.
std::vector<CommandResult> run_commands(const std::vector<std::vector<std::string>>& commands,
                                        int max_parallel, const std::string& log_prefix);

}  // namespace luminal
