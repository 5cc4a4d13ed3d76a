# Two commands for a newcomer: `make demo` and `make test`. Each does its own set-up.
VENV   := .venv
PY     := $(VENV)/bin/python
CMAKE  := $(VENV)/bin/cmake
CTEST  := $(VENV)/bin/ctest
SETUP_STAMP := $(VENV)/.setup-done
# The torch-free layers (runtime, IR, executor interface, engine core) and their GoogleTest
# suites build on their own, without torch.
RUNTIME_BUILD := build/runtime-tests
export CCACHE_DIR ?= $(HOME)/.cache/ccache

.PHONY: setup build demo test test-cpp test-python bench conformance clean

$(SETUP_STAMP): scripts/setup.sh scripts/pjrt_plugins.txt
	bash scripts/setup.sh
	touch $@

setup: $(SETUP_STAMP)

# Editable install through scikit-build-core; the build directory persists under build/, so a
# rebuild after a small change recompiles only what changed (ccache catches the rest).
build: setup
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 $(PY) -m pip install -q --no-build-isolation --no-deps -e .

demo: build
	$(PY) -m torch_tpu.demo

test: test-cpp test-python

test-cpp: setup
	$(CMAKE) -S . -B $(RUNTIME_BUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DTORCH_TPU_BUILD_EXTENSION=OFF -DTORCH_TPU_BUILD_TESTS=ON >/dev/null
	$(CMAKE) --build $(RUNTIME_BUILD) -j2
	$(CTEST) --test-dir $(RUNTIME_BUILD) --output-on-failure -j2

test-python: build
	$(PY) -m pytest tests/python -q -p no:cacheprovider --durations=25

bench: build
	$(PY) benchmarks/op_overhead.py
	$(PY) benchmarks/demo_training.py
	$(PY) benchmarks/fused_elementwise.py
	$(PY) benchmarks/fused_demo.py
	$(PY) benchmarks/fused_models.py
	$(PY) benchmarks/first_step.py
	$(PY) benchmarks/co_tenant.py
	$(PY) benchmarks/collectives.py
	$(PY) benchmarks/ddp_scaling.py

# The full sweeps in Strict, Debug and Fused mode; rewrites conformance/reports/ (takes a
# while). The CI tier holds fused mode to Strict's reports (tests/python/test_conformance.py).
conformance: build
	$(PY) -m conformance.opinfo --mode strict
	$(PY) -m conformance.opinfo --mode debug
	$(PY) -m conformance.opinfo --mode fused
	$(PY) -m conformance.hf --mode strict
	$(PY) -m conformance.hf --mode debug
	$(PY) -m conformance.hf --mode fused
	$(PY) -m conformance.modules --mode strict
	$(PY) -m conformance.modules --mode debug
	$(PY) -m conformance.modules --mode fused

clean:
	rm -rf build
