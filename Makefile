# The developer entry points; the README's two commands are `make run` and
# `make test`. Every target goes through uv. When uv is not on PATH it is
# installed with pip for the current user and run as `python3 -m uv`, which
# works even when pip's script directory is not on PATH.

UV ?= $(if $(shell command -v uv 2>/dev/null),uv,python3 -m uv)
ARGS ?=
BUF = node_modules/.bin/buf
PROTO = packages/skift-server/proto
CONTRACT = packages/skift-server/contract/skift.v1.binpb

.PHONY: run walkthrough test check generate contract bench bench-full sync npm uv

## run: serve skift on the embedded PostgreSQL (no database to configure); prints how to connect
run: sync
	$(UV) run skift-serve --http 127.0.0.1:7434 $(ARGS)

## walkthrough: a scripted walk through the library on the embedded PostgreSQL
walkthrough: sync
	$(UV) run python -m skift_pg.walkthrough

## test: the test suite; SKIFT_TEST_DSN picks a server, else a throwaway embedded cluster
test: sync npm
	$(UV) run pytest -q -p no:cacheprovider $(ARGS)

## check: lint, formatting, types, the import layers (no cycles), the generated protobuf code up
## to date, and the proto clean under buf lint (STANDARD + COMMENTS) and not breaking the committed contract
check: sync npm
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run pyright
	$(UV) run lint-imports
	$(UV) run python packages/skift-server/tools/generate_proto.py --check
	$(UV) run python packages/skift-core/tools/gen_surface.py --check
	$(UV) run python packages/skift-server/tools/gen_client.py --check
	$(UV) run python packages/skift-cli/tools/gen_help.py --check
	$(BUF) lint $(PROTO)
	$(BUF) breaking $(PROTO) --against $(CONTRACT)

## generate: regenerate skift_server._proto from packages/skift-server/proto (betterproto2), the
## Skift protocol and RemoteSkift's generated methods
generate: sync
	$(UV) run python packages/skift-server/tools/generate_proto.py
	$(UV) run python packages/skift-core/tools/gen_surface.py
	$(UV) run python packages/skift-server/tools/gen_client.py
	$(UV) run python packages/skift-cli/tools/gen_help.py

## contract: accept the proto as the new baseline buf breaking compares against (after an
## additive change, so later changes cannot break what it added; never to let a break through)
contract: npm
	$(BUF) lint $(PROTO)
	$(BUF) breaking $(PROTO) --against $(CONTRACT)
	$(BUF) build $(PROTO) --exclude-source-info -o $(CONTRACT)

## bench: the benchmarks, quick mode (10k nodes, short runs; a few minutes); see docs/benchmarks.md
bench: sync
	$(UV) run python -m bench $(ARGS)

## bench-full: the benchmarks at 10k, 100k and 1M nodes (heavy: minutes, GBs of scratch data)
bench-full: sync
	$(UV) run python -m bench --full $(ARGS)

## sync: install exactly what uv.lock pins into .venv
sync: uv
	$(UV) sync --locked

## npm: install exactly what package-lock.json pins (buf, the interop suite's Node gRPC client)
npm: node_modules/.package-lock.json

node_modules/.package-lock.json: package-lock.json package.json
	npm ci --no-audit --no-fund --loglevel=error

uv:
	@$(UV) --version >/dev/null 2>&1 || { \
		echo "uv not found; installing it with pip"; \
		python3 -m pip install --user uv || python3 -m pip install uv; \
	}
