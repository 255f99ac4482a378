// A reader of s-expression text: atoms, lists, ';' comments to end of line, and "{...}"
// atoms that keep spaces (for symbolic expressions). Used by rule files and program text.
#pragma once

#include <string>
#include <vector>

namespace luminal {

struct SExpr {
  bool is_list = false;
  std::string atom;           // when !is_list
  std::vector<SExpr> items;   // when is_list
  int line = 0;               // where it starts, for messages

  std::string to_string() const;
};

// Every top-level expression of `text`. Throws CompileError naming `source` and the line.
std::vector<SExpr> read_sexprs(const std::string& text, const std::string& source);

}  // namespace luminal
