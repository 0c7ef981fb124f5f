# objtier — the two entry points a new user needs:
#   make demo   set up, build, and run the main job end to end on the default workload
#   make test   set up, build, and run the test suite
# Both install what they need (apt, pip) themselves and are idempotent.

VENV    := .venv
PY      := $(VENV)/bin/python
OBJTIER := $(VENV)/bin/objtier
BUILD   := build/native
NATIVE  := src/objtier/_native
DEMO    := demo-out

.PHONY: help setup build demo test test-all bench clean

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

test: build ## run the default test suite
	@$(PY) -m pytest -q tests

bench: build ## run the benchmarks (results go to docs/benchmarks.md by hand)
	@$(PY) bench/run_all.py

clean: ## remove build outputs
	rm -rf build $(NATIVE) $(DEMO)
