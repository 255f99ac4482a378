// The runtimes' lowering rules (csrc/runtime/rules/*.rules), embedded at build time: what each
// runtime returns from Runtime::rewrite_rules().
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace luminal {

// (file name, contents) of every runtime rule file, sorted by name (generated at build time).
const std::vector<std::pair<std::string, std::string>>& runtime_rule_files();

// The contents of one of them; throws InternalError when there is no such file.
std::string runtime_rules(const std::string& file_name);

}  // namespace luminal
