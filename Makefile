# The developer entry points; the README's two commands are `make run` and
# `make test`. Every target goes through uv. When uv is not on PATH it is
# installed with pip for the current user and run as `python3 -m uv`, which
# works even when pip's script directory is not on PATH.

UV ?= $(if $(shell command -v uv 2>/dev/null),uv,python3 -m uv)
ARGS ?=

.PHONY: run test check generate bench sync uv

## run: a scripted walk through skift on the embedded PostgreSQL (no database to configure)
run: sync
	$(UV) run python -m skift_pg.walkthrough

## test: the test suite; SKIFT_TEST_DSN picks a server, else a throwaway embedded cluster
test: sync
	$(UV) run pytest -q -p no:cacheprovider $(ARGS)

## check: lint, formatting and types (and, once code is generated, that it is up to date)
check: sync
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run pyright

## generate: regenerate generated code (protobuf, later)
generate: uv
	@echo "nothing to generate yet"

## bench: the benchmark harness in bench/
bench: sync
	@if [ -f bench/__main__.py ]; then \
		$(UV) run python -m bench; \
	else \
		echo "benchmarks are not built yet (bench/__main__.py does not exist)"; \
	fi

## sync: install exactly what uv.lock pins into .venv
sync: uv
	$(UV) sync --locked

uv:
	@$(UV) --version >/dev/null 2>&1 || { \
		echo "uv not found; installing it with pip"; \
		python3 -m pip install --user uv || python3 -m pip install uv; \
	}
