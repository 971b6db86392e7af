# The developer entry points; the README's two commands are `make run` and
# `make test`. Every target goes through uv. When uv is not on PATH it is
# installed with pip for the current user and run as `python3 -m uv`, which
# works even when pip's script directory is not on PATH.

UV ?= $(if $(shell command -v uv 2>/dev/null),uv,python3 -m uv)
ARGS ?=

.PHONY: run walkthrough test check generate bench bench-full sync uv

## run: serve skift on the embedded PostgreSQL (no database to configure); prints how to connect
run: sync
	$(UV) run skift-serve --http 127.0.0.1:7434 $(ARGS)

## walkthrough: a scripted walk through the library on the embedded PostgreSQL
walkthrough: sync
	$(UV) run python -m skift_pg.walkthrough

## test: the test suite; SKIFT_TEST_DSN picks a server, else a throwaway embedded cluster
test: sync
	$(UV) run pytest -q -p no:cacheprovider $(ARGS)

## check: lint, formatting, types, and that the generated protobuf code is up to date
check: sync
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run pyright
	$(UV) run python packages/skift-server/tools/generate_proto.py --check

## generate: regenerate skift_server._proto from packages/skift-server/proto (betterproto2)
generate: sync
	$(UV) run python packages/skift-server/tools/generate_proto.py

## bench: the benchmarks, quick mode (10k nodes, short runs; a few minutes); see docs/benchmarks.md
bench: sync
	$(UV) run python -m bench $(ARGS)

## bench-full: the benchmarks at 10k, 100k and 1M nodes (heavy: minutes, GBs of scratch data)
bench-full: sync
	$(UV) run python -m bench --full $(ARGS)

## sync: install exactly what uv.lock pins into .venv
sync: uv
	$(UV) sync --locked

uv:
	@$(UV) --version >/dev/null 2>&1 || { \
		echo "uv not found; installing it with pip"; \
		python3 -m pip install --user uv || python3 -m pip install uv; \
	}
