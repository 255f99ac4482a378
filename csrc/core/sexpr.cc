// The s-expression reader: a hand-written scanner over the text with line tracking.
#include "core/sexpr.h"

#include <cctype>

#include "core/errors.h"

namespace luminal {

std::string SExpr::to_string() const {
  if (!is_list) return atom;
  std::string out = "(";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? " " : "") + items[i].to_string();
  return out + ")";
}

namespace {
struct Reader {
  const std::string& text;
  const std::string& source;
  size_t pos = 0;
  int line = 1;

  [[noreturn]] void fail(const std::string& what) const {
    throw CompileError(source + " line " + std::to_string(line) + ": " + what);
  }
  void skip_space() {
    while (pos < text.size()) {
      char c = text[pos];
      if (c == '\n') {
        ++line;
        ++pos;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos;
      } else if (c == ';') {
        while (pos < text.size() && text[pos] != '\n') ++pos;
      } else {
        return;
      }
    }
  }
  SExpr read() {
    skip_space();
    if (pos >= text.size()) fail("unexpected end of text");
    SExpr e;
    e.line = line;
    char c = text[pos];
    if (c == ')') fail("unexpected ')'");
    if (c == '(') {
      ++pos;
      e.is_list = true;
      for (;;) {
        skip_space();
        if (pos >= text.size()) fail("missing ')' for the list opened on line " +
                                     std::to_string(e.line));
        if (text[pos] == ')') {
          ++pos;
          return e;
        }
        e.items.push_back(read());
      }
    }
    if (c == '{') {
      size_t end = text.find('}', pos);
      if (end == std::string::npos) fail("missing '}'");
      e.atom = text.substr(pos, end + 1 - pos);
      pos = end + 1;
      return e;
    }
    size_t start = pos;
    while (pos < text.size()) {
      char d = text[pos];
      if (std::isspace(static_cast<unsigned char>(d)) || d == '(' || d == ')' || d == ';') break;
      ++pos;
    }
    e.atom = text.substr(start, pos - start);
    return e;
  }
};
}  // namespace

std::vector<SExpr> read_sexprs(const std::string& text, const std::string& source) {
  Reader r{text, source};
  std::vector<SExpr> out;
  for (;;) {
    r.skip_space();
    if (r.pos >= text.size()) return out;
    out.push_back(r.read());
  }
}

}  // namespace luminal
