// Moving a kernel unit's big helpers into units of their own (see outline.h). The helpers are
// CodeWriter functions: "static inline void NAME(PARAMS) {" at column 0, closed by "}" there.
#include "codegen/c/outline.h"

#include <sstream>
#include <vector>

#include "core/errors.h"

namespace luminal {

namespace {

constexpr const char* kDefinition = "static inline void ";
constexpr const char* kOutlined[] = {"lm_mm_", "lm_gemv_"};
constexpr const char* kHidden = "__attribute__((visibility(\"hidden\"))) void ";

// The name of the big helper `line` opens, or "" where it opens none.
std::string helper_name(const std::string& line) {
  const std::string def = kDefinition;
  if (line.rfind(def, 0) != 0 || line.size() < 2 || line.compare(line.size() - 2, 2, " {") != 0) {
    return "";
  }
  const std::string rest = line.substr(def.size());
  for (const char* prefix : kOutlined) {
    if (rest.rfind(prefix, 0) == 0) return rest.substr(0, rest.find('('));
  }
  return "";
}

}  // namespace

std::string outline_helpers(const std::string& unit,
                            std::map<std::string, std::string>& helpers) {
  std::vector<std::string> lines;
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string kept;     // the kernel unit as it becomes
  std::string context;  // the lines before the current one, big helpers declared only
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string name = helper_name(lines[i]);
    if (name.empty()) {
      kept += lines[i] + "\n";
      context += lines[i] + "\n";
      continue;
    }
    // The signature without "static inline void " and " {".
    const std::string signature =
        lines[i].substr(std::string(kDefinition).size(),
                        lines[i].size() - std::string(kDefinition).size() - 2);
    std::string body = lines[i].substr(std::string(kDefinition).size()) + "\n";
    while (++i < lines.size() && lines[i] != "}") body += lines[i] + "\n";
    body += "}\n";
    const std::string definition = kHidden + body;
    auto it = helpers.find(name);
    if (it == helpers.end()) {
      helpers[name] = context + definition;
    } else if (it->second.size() < definition.size() ||
               it->second.compare(it->second.size() - definition.size(), definition.size(),
                                  definition) != 0) {
      throw InternalError("codegen: two kernels define the helper " + name + " differently");
    }
    kept += kHidden + signature + ";\n";
    context += kHidden + signature + ";\n";
  }
  return kept;
}

}  // namespace luminal
