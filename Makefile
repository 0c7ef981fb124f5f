# objtier — the two entry points a new user needs:
#   make demo   set up, build, and run the main job end to end on the default workload
#   make test   set up, build, lint, and run the quick tests (at most 10 minutes on a 2-core VM)
# Both install what they need (apt, pip) themselves and are idempotent. `make test-heavy` runs
# the rest (guest boots, long real-pressure runs, heavy real programs); CI runs both.

VENV    := .venv
PY      := $(VENV)/bin/python
OBJTIER := $(VENV)/bin/objtier
BUILD   := build/native
NATIVE  := src/objtier/_native
DEMO    := demo-out

.PHONY: help setup build demo lint test test-heavy bench bench-doc clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

setup: ## install system and Python dependencies (idempotent)
	@bash scripts/setup.sh

build: setup ## build the native runtime, simulator and workloads into src/objtier/_native
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_INSTALL_PREFIX=$(CURDIR)/$(NATIVE) >/dev/null
	@cmake --build $(BUILD)
	@cmake --install $(BUILD) >/dev/null

demo: build ## record -> report on the default graph workload
	@bash scripts/demo.sh $(DEMO)

lint: setup ## ruff on the Python, clang-format on the C
	@$(VENV)/bin/ruff check src tests bench
	@clang-format-16 --dry-run -Werror $$(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find native workloads tests -name '*.[ch]' -o -name '*.cpp')

test: build lint ## lint, then the quick tests: everything not marked heavy
	@$(PY) -m pytest -q -m "not heavy" tests

test-heavy: build ## the heavy tests: guest boots, long real-pressure runs, heavy real programs
	@$(PY) -m pytest -q -m heavy tests

bench: build ## list the benchmarks (objtier.benchmarks; each is run on its own, figures in docs/benchmarks.md)
	@$(OBJTIER) bench --benchmarks

bench-doc: ## render docs/benchmarks.md from the results files in bench/results/
	@$(PY) bench/render_benchmarks.py

clean: ## remove build outputs
	rm -rf build $(NATIVE) $(DEMO)
