# create-grpc-svc: `make test` runs every test; `make demo` scaffolds a service and starts it.
# Both work on a fresh clone with only Node (24, see .nvmrc; at least 22.13) and npm (plus make and git).

.DEFAULT_GOAL := help
MAKEFLAGS += --no-print-directory
# The test stages share ports, caches and dist/; run them one at a time even under -j.
.NOTPARALLEL:

DIR ?= ./demo
UNIT_TESTS = $(shell find test -name '*.test.ts' -not -path 'test/e2e/*' | sort)
E2E_TESTS = $(shell find test/e2e -name '*.test.ts' 2>/dev/null | sort)

.PHONY: help test test-template test-unit test-e2e demo lint build protos bench soak

help: ## List the targets
	@echo "Usage: make <target>"
	@awk 'BEGIN {FS = ":.*## "} /^[a-z0-9-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

test: test-template test-unit test-e2e ## Run every test: the template's own, the scaffolder's, then end-to-end

test-template: protos template/node_modules/.package-lock.json ## The template's tests in place: the service's, the framework's suite, the system tests (promtool, chromium), the fleet (haproxy)
	$(MAKE) -C template test test-framework test-system fleet

test-unit: build protos template/node_modules/.package-lock.json ## The scaffolder's tests (test/, without test/e2e)
	node --import tsx --test $(UNIT_TESTS)

test-e2e: build protos template/node_modules/.package-lock.json ## Pack, scaffold with npm exec, run make test in the generated repos
	node --import tsx --test $(E2E_TESTS)

bench: protos template/node_modules/.package-lock.json ## The template's load benchmarks, in place (cd template && make bench); see BENCHMARKS.md
	$(MAKE) -C template bench

soak: protos template/node_modules/.package-lock.json ## The template's mixed-load soak (30 s warm-up + 60 s), in place (cd template && make soak); see BENCHMARKS.md
	$(MAKE) -C template soak

demo: build protos ## Scaffold a service with default options into DIR (./demo), install it and start it
	@# No git repository: the demo lives inside this one and is regenerated in place with --force.
	node dist/generator/cli.js $(DIR) --yes --force --no-git
	$(MAKE) -C $(DIR) run

lint: node_modules/.package-lock.json template/node_modules/.package-lock.json protos ## Type-check and oxlint the generator, scripts and tests (the template's rules); lint the template
	npx --no-install tsc -p tsconfig.json --noEmit
	npx --no-install tsc -p tsconfig.scripts.json
	npx --no-install oxlint -c template/.oxlintrc.json generator test scripts
	$(MAKE) -C template lint

build: node_modules/.package-lock.json ## Compile the generator to dist/
	npm run --silent build

protos: node_modules/.package-lock.json ## Gather the third-party protos into proto/ and template/proto/
	npm run --silent protos

# Installed when missing. Not `npm ci`: lockfiles written through a registry mirror that serves only
# linux builds lack the other platforms' optional packages (buf, esbuild, tsc), and npm ci rejects
# such a lockfile on every platform. `npm install` installs the locked versions and leaves the lockfile as is.
node_modules/.package-lock.json:
	npm install --no-audit --no-fund

template/node_modules/.package-lock.json:
	cd template && npm install --no-audit --no-fund
