// parse_expr (core/symbolic.h): a small recursive-descent parser of Expr::to_string's syntax.
#include <cctype>
#include <string>

#include "core/errors.h"
#include "core/symbolic.h"

namespace luminal {

namespace {
struct ExprParser {
  const std::string& s;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw CompileError("expression '" + s + "': " + what + " at position " + std::to_string(pos));
  }
  void space() {
    while (pos < s.size() && s[pos] == ' ') ++pos;
  }
  bool eat(const std::string& tok) {
    space();
    if (s.compare(pos, tok.size(), tok) != 0) return false;
    bool word = std::isalpha(static_cast<unsigned char>(tok[0]));
    size_t end = pos + tok.size();
    if (word && end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) ||
                                   s[end] == '_')) {
      return false;
    }
    pos = end;
    return true;
  }
  Expr parse_or() {
    Expr e = parse_and();
    while (eat("or")) e = logical_or(e, parse_and());
    return e;
  }
  Expr parse_and() {
    Expr e = parse_compare();
    while (eat("and")) e = logical_and(e, parse_compare());
    return e;
  }
  Expr parse_compare() {
    Expr e = parse_sum();
    if (eat("==")) return eq(e, parse_sum());
    if (eat("!=")) return ne(e, parse_sum());
    if (eat("<=")) return le(e, parse_sum());
    if (eat(">=")) return ge(e, parse_sum());
    if (eat("<")) return lt(e, parse_sum());
    if (eat(">")) return gt(e, parse_sum());
    return e;
  }
  Expr parse_sum() {
    Expr e = parse_term();
    for (;;) {
      if (eat("+")) {
        e = e + parse_term();
      } else if (eat("-")) {
        e = e - parse_term();
      } else {
        return e;
      }
    }
  }
  Expr parse_term() {
    Expr e = parse_unary();
    for (;;) {
      if (eat("*")) {
        e = e * parse_unary();
      } else if (eat("//")) {
        e = e / parse_unary();
      } else if (eat("%")) {
        e = e % parse_unary();
      } else {
        return e;
      }
    }
  }
  Expr parse_unary() {
    if (eat("-")) return -parse_unary();
    return parse_atom();
  }
  Expr parse_atom() {
    space();
    if (pos >= s.size()) fail("unexpected end");
    if (eat("(")) {
      Expr e = parse_or();
      if (!eat(")")) fail("expected ')'");
      return e;
    }
    char c = s[pos];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos;
      while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) ++pos;
      return Expr(static_cast<int64_t>(std::stoull(s.substr(start, pos - start))));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos;
      while (pos < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) {
        ++pos;
      }
      std::string name = s.substr(start, pos - start);
      if ((name == "min" || name == "max") && eat("(")) {
        Expr a = parse_or();
        if (!eat(",")) fail("expected ','");
        Expr b = parse_or();
        if (!eat(")")) fail("expected ')'");
        return name == "min" ? min(a, b) : max(a, b);
      }
      return Expr::symbol(name);
    }
    fail(std::string("unexpected '") + c + "'");
  }
};
}  // namespace

Expr parse_expr(const std::string& text) {
  ExprParser p{text};
  Expr e = p.parse_or();
  p.space();
  if (p.pos != text.size()) p.fail("trailing text");
  return e;
}

}  // namespace luminal
