// Bindings of luminal::Expr (core/symbolic.h). An Expr is an immutable value: Python holds its
// own copy, sharing the C++ nodes. Python ints and symbol-name strs convert to Expr wherever a
// bound function takes one. Adapters only; the algebra lives in csrc/core.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "core/symbolic.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

void init_symbolic(nb::module_& m) {
  using E = const Expr&;
  nb::class_<Expr>(m, "Expr",
                   "A symbolic integer expression over non-negative named symbols, kept in a "
                   "canonical simplified form. // and % are floor division and modulo.")
      .def(nb::init<int64_t>(), "value"_a)
      .def(nb::init<const Expr&>(), "other"_a.noconvert())
      .def("__init__", [](Expr* e, const std::string& name) { new (e) Expr(Expr::symbol(name)); },
           "name"_a)
      .def_static("symbol", &Expr::symbol, "name"_a)
      .def("is_const", &Expr::is_const)
      .def("is_symbol", &Expr::is_symbol)
      .def("as_const", &Expr::as_const)
      .def("__int__", &Expr::as_const)
      .def("__add__", [](E a, E b) { return a + b; }, nb::is_operator())
      .def("__radd__", [](E a, E b) { return b + a; }, nb::is_operator())
      .def("__sub__", [](E a, E b) { return a - b; }, nb::is_operator())
      .def("__rsub__", [](E a, E b) { return b - a; }, nb::is_operator())
      .def("__mul__", [](E a, E b) { return a * b; }, nb::is_operator())
      .def("__rmul__", [](E a, E b) { return b * a; }, nb::is_operator())
      .def("__floordiv__", [](E a, E b) { return a / b; }, nb::is_operator())
      .def("__rfloordiv__", [](E a, E b) { return b / a; }, nb::is_operator())
      .def("__mod__", [](E a, E b) { return a % b; }, nb::is_operator())
      .def("__rmod__", [](E a, E b) { return b % a; }, nb::is_operator())
      .def("__neg__", [](E a) { return -a; })
      .def("min", [](E a, E b) { return min(a, b); }, "other"_a)
      .def("max", [](E a, E b) { return max(a, b); }, "other"_a)
      .def("lt", [](E a, E b) { return lt(a, b); }, "other"_a)
      .def("le", [](E a, E b) { return le(a, b); }, "other"_a)
      .def("gt", [](E a, E b) { return gt(a, b); }, "other"_a)
      .def("ge", [](E a, E b) { return ge(a, b); }, "other"_a)
      .def("eq", [](E a, E b) { return eq(a, b); }, "other"_a)
      .def("ne", [](E a, E b) { return ne(a, b); }, "other"_a)
      .def("logical_and", [](E a, E b) { return logical_and(a, b); }, "other"_a)
      .def("logical_or", [](E a, E b) { return logical_or(a, b); }, "other"_a)
      .def("substitute", nb::overload_cast<const std::map<std::string, Expr>&>(
                             &Expr::substitute, nb::const_), "values"_a)
      .def("substitute", nb::overload_cast<const std::string&, const Expr&>(
                             &Expr::substitute, nb::const_), "name"_a, "value"_a)
      .def("eval", &Expr::eval, "env"_a = DynMap())
      .def("symbols", &Expr::symbols)
      .def("to_c", &Expr::to_c)
      .def("__str__", &Expr::to_string)
      .def("__repr__", [](E a) { return "Expr(" + a.to_string() + ")"; })
      // Structural equality with an Expr or an int only: no str -> symbol conversion here.
      .def("__eq__", [](E a, E b) { return a == b; }, "other"_a.noconvert(), nb::is_operator())
      .def("__eq__", [](E a, int64_t b) { return a == Expr(b); }, "other"_a.noconvert(),
           nb::is_operator())
      .def("__ne__", [](E a, E b) { return a != b; }, "other"_a.noconvert(), nb::is_operator())
      .def("__ne__", [](E a, int64_t b) { return a != Expr(b); }, "other"_a.noconvert(),
           nb::is_operator())
      // A constant hashes as its int does, since it compares equal to it.
      .def("__hash__", [](E a) {
        std::optional<int64_t> c = a.try_const();
        if (c) return nb::hash(nb::int_(*c));
        return static_cast<Py_hash_t>(a.hash());
      });
  nb::implicitly_convertible<int64_t, Expr>();
  nb::implicitly_convertible<std::string, Expr>();
}

}  // namespace luminal
