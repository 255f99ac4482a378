// runtime_rules: looks a rule file up by name among the embedded ones.
#include "runtime/runtime_rules.h"

#include "core/errors.h"

namespace luminal {

std::string runtime_rules(const std::string& file_name) {
  for (const auto& [name, text] : runtime_rule_files()) {
    if (name == file_name) return text;
  }
  throw InternalError("no runtime rule file named " + file_name);
}

}  // namespace luminal
