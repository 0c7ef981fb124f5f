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

.PHONY: help setup build demo test bench clean

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

test: build ## lint, then run the default test suite
	@$(VENV)/bin/ruff check src tests bench
	@clang-format-16 --dry-run -Werror $$(git ls-files '*.c' '*.h' '*.cpp' 2>/dev/null || find native workloads tests -name '*.[ch]' -o -name '*.cpp')
	@$(PY) -m pytest -q tests

bench: build ## list the benchmarks (each is run on its own; results go to docs/benchmarks.md)
	@for f in bench/*.py; do printf '%-32s %s\n' "$$f" "$$($(PY) -c 'import ast,sys; d=ast.get_docstring(ast.parse(open(sys.argv[1]).read())) or ""; print(d.splitlines()[0] if d else "")' $$f)"; done

clean: ## remove build outputs
	rm -rf build $(NATIVE) $(DEMO)
