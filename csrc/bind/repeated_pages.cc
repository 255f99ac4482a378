// Binding of RepeatedPages (core/repeated_pages.h): repeated_pages(pattern, bytes), a numpy
// uint8 array of `bytes` bytes repeating the pattern's, owning its mapping; None where this
// system cannot map one (the caller copies).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include "core/repeated_pages.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {

namespace {
using Pattern = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

nb::object repeated_pages(const Pattern& pattern, size_t bytes) {
  std::unique_ptr<RepeatedPages> pages;
  {
    nb::gil_scoped_release unlocked;
    pages = RepeatedPages::map(pattern.data(), pattern.nbytes(), bytes);
  }
  if (!pages) return nb::none();
  uint8_t* data = pages->data();
  nb::capsule owner(pages.release(),
                    [](void* p) noexcept { delete static_cast<RepeatedPages*>(p); });
  const size_t shape[1] = {bytes};
  return nb::cast(nb::ndarray<nb::numpy, uint8_t>(data, 1, shape, owner));
}
}  // namespace

void init_repeated_pages(nb::module_& m) {
  m.def("repeated_pages", &repeated_pages, "pattern"_a, "bytes"_a,
        "A uint8 array of `bytes` bytes repeating `pattern`'s (whole pages), its pages mapped "
        "again instead of copied; None where this system cannot.");
}

}  // namespace luminal
