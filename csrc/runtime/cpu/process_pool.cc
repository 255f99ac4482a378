// run_commands: spawns up to N children with posix_spawnp, output to a log file each, then
// polls them with waitpid(pid, WNOHANG) (never waitpid(-1), which could reap others' children).
#include "runtime/cpu/process_pool.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/disk_cache.h"

extern char** environ;

namespace luminal {

namespace {

// Starts argv with stdout and stderr into `log`; the child's pid, or -1.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// The exit code of a finished child, -1 for a signal; nullopt-like -2 while it still runs.
int poll_child(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return -2;
  if (r < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::vector<CommandResult> run_commands(const std::vector<std::vector<std::string>>& commands,
                                        int max_parallel, const std::string& log_prefix) {
  std::vector<CommandResult> results(commands.size());
  std::vector<std::string> logs;
  for (size_t i = 0; i < commands.size(); ++i) {
    logs.push_back(log_prefix + "." + std::to_string(i) + ".log");
  }
  std::vector<std::pair<pid_t, size_t>> running;  // (pid, command index)
  size_t next = 0;
  auto finish = [&](size_t i, int code) {
    results[i].exit_code = code;
    results[i].output = read_file(logs[i]).value_or("");
    std::remove(logs[i].c_str());
  };
  while (next < commands.size() || !running.empty()) {
    while (next < commands.size() && static_cast<int>(running.size()) < max_parallel) {
      pid_t pid = spawn(commands[next], logs[next]);
      if (pid < 0) {
        finish(next, -1);
      } else {
        running.push_back({pid, next});
      }
      ++next;
    }
    bool any = false;
    for (size_t r = 0; r < running.size();) {
      int code = poll_child(running[r].first);
      if (code == -2) {
        ++r;
        continue;
      }
      finish(running[r].second, code);
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
      any = true;
    }
    if (!any && !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return results;
}

}  // namespace luminal
