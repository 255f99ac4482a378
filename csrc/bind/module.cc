// The luminal._core extension: one init_xxx per area, and the mapping of C++ errors to the
// Python classes in luminal.errors. Bindings only; no logic lives here.
#include <nanobind/nanobind.h>

#include "core/errors.h"

namespace nb = nanobind;

namespace luminal {
void init_symbolic(nb::module_& m);
void init_ir(nb::module_& m);
void init_runtime(nb::module_& m);
void init_cpu(nb::module_& m);
void init_egraph(nb::module_& m);
void init_cuda(nb::module_& m);
void init_metal(nb::module_& m);
void init_metal_runtime(nb::module_& m);
void init_precision(nb::module_& m);
void init_scalar(nb::module_& m);
void init_repeated_pages(nb::module_& m);
}  // namespace luminal

namespace {
void raise_as(const char* python_class, const std::exception& e) {
  nb::object cls = nb::module_::import_("luminal.errors").attr(python_class);
  PyErr_SetString(cls.ptr(), e.what());
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const luminal::LuminalError& e) {
    raise_as(e.class_name(), e);
  }
}
}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "luminal's C++ core: symbolic shapes, the HLIR graph and the runtimes";
  nb::set_leak_warnings(false);  // objects held by Python at exit are not leaks
  nb::register_exception_translator(translate);
  luminal::init_symbolic(m);
  luminal::init_ir(m);
  luminal::init_runtime(m);
  luminal::init_cpu(m);
  luminal::init_egraph(m);
  luminal::init_cuda(m);
  luminal::init_metal(m);
  luminal::init_metal_runtime(m);
  luminal::init_precision(m);
  luminal::init_scalar(m);
  luminal::init_repeated_pages(m);
}
