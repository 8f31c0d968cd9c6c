# Every routine task of the project. `make help` lists them.
# Targets that need the virtualenv create it on demand.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# `make test` runs the suites on this many pytest-xdist workers, each with a broker of its
# own: most integration tests wait on the broker, so two overlap well on two cores.
TEST_WORKERS ?= 2

.DEFAULT_GOAL := help
.PHONY: help setup demo test test-unit test-integration test-container test-cluster lint docs docs-serve fmt bench \
        test-pure broker-up broker-down broker-status image up down clean dist

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[1m%-18s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# The install compiles the modules streams/speedups.py lists: an edit to one builds again.
COMPILED_SOURCES := $(shell sed -n 's|^    "\(streams\.[a-z_.]*\)",$$|\1|p' streams/speedups.py | tr . / | sed 's|$$|.py|')
$(STAMP): pyproject.toml setup.py streams/speedups.py $(COMPILED_SOURCES) $(wildcard streams/codec/*.pxd)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP) ## create the virtualenv and install the package with its dev extra

demo: $(STAMP) ## run the tour on the local broker (started if needed)
	$(BIN)/streams demo

# The cluster tests run after the rest, in one process: they kill nodes of a three-node
# cluster and need the CPU its JVMs take, which xdist workers would each start again.
test: $(STAMP) ## run every test: unit, integration (real broker), container (TEST_WORKERS=2), cluster, the compiled modules' unit tests as plain Python
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal --ignore=tests/cluster $(PYTEST_ARGS)
	$(BIN)/pytest tests/cluster $(PYTEST_ARGS)
	$(PURE_UNIT) $(PYTEST_ARGS)

# The plain-Python pass: the unit tests of the packages that have compiled modules
# (streams/speedups.py), run on their plain sources, as where no C compiler built them; less
# the comparisons of the compiled with the plain. streams/codec/avro.py -> tests/unit/codec,
# a top-level module such as streams/envelope.py -> tests/unit/test_envelope.py.
PURE_TESTS := $(sort $(foreach src,$(COMPILED_SOURCES),$(if $(filter %.py,$(word 2,$(subst /, ,$(src)))),tests/unit/test_$(word 2,$(subst /, ,$(src))),tests/unit/$(word 2,$(subst /, ,$(src))))))
PURE_UNIT = STREAMS_PURE_PYTHON=1 $(BIN)/pytest -n $(TEST_WORKERS) $(PURE_TESTS) \
	--ignore=tests/unit/codec/test_speedups.py \
	--deselect tests/unit/codec/test_compiled.py::test_the_compiled_machine_does_what_the_plain_one_does

test-pure: $(STAMP) ## the compiled modules' unit tests on their plain Python sources (as without a C compiler)
	$(PURE_UNIT) $(PYTEST_ARGS)

test-unit: $(STAMP) ## unit tests only (no broker)
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

test-integration: $(STAMP) ## integration tests against a real broker
	$(BIN)/pytest tests/integration $(PYTEST_ARGS)

test-container: $(STAMP) ## container tests (Docker; the image from `make image`)
	$(BIN)/pytest tests/container $(PYTEST_ARGS)

test-cluster: $(STAMP) ## cluster tests: a local three-node cluster, nodes killed and paused
	$(BIN)/pytest tests/cluster $(PYTEST_ARGS)

lint: $(STAMP) ## ruff and mypy
	$(BIN)/ruff check streams tests $(wildcard topology)
	$(BIN)/ruff format --check streams tests $(wildcard topology)
	$(BIN)/mypy

# NO_MKDOCS_2_WARNING: mkdocs-material's banner about its successor, printed on every build.
docs: $(STAMP) ## build the docs site into site/ (mkdocs --strict: a broken link or reference fails)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(STAMP) ## serve the docs site on http://127.0.0.1:8000, rebuilt on every change
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict

fmt: $(STAMP) ## format the code with ruff
	$(BIN)/ruff format streams tests $(wildcard topology)
	$(BIN)/ruff check --fix streams tests $(wildcard topology)

bench: $(STAMP) ## measure throughput against a bare confluent-kafka loop
	$(BIN)/python -m streams.bench

# Built in an isolated environment (setuptools, wheel and Cython from PyPI); stale build
# output is removed first, so a module deleted from the tree cannot ride along.
dist: $(STAMP) ## build the wheel into dist/ (the record path compiled with Cython when a C compiler is here)
	rm -rf build/lib.* build/bdist.* dist/streams-*.whl
	$(BIN)/pip wheel --no-deps --wheel-dir dist .

broker-up: $(STAMP) ## start the local Apache Kafka broker
	$(BIN)/streams broker up

broker-down: $(STAMP) ## stop the local broker
	$(BIN)/streams broker down

broker-status: $(STAMP) ## show the local broker's status
	$(BIN)/streams broker status

image: $(STAMP) ## build streams-kafka:<version> locally, no registry needed (cached)
	PYTHON=$(BIN)/python bash compose/image/build.sh

up: $(STAMP) ## start the compose stack: Kafka + the orders topology (COMPOSE_PROFILES=ui: Kafka UI)
	PYTHON=$(BIN)/python bash compose/stack.sh up

down: ## stop the compose stack and remove its data
	bash compose/stack.sh down

clean: ## remove the virtualenv, caches and compiled modules (the Kafka jar cache stays)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis build dist *.egg-info
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
	find streams -name '*.so' -delete
