# The framework's own benchmarks, for developing the framework in the create-grpc-svc repository
# (`cd template && make bench`, or `make bench` at its root). A generated repo has none of bench/: its
# `make bench` (the Makefile's) loads the team's own service with scripts/bench.ts. framework-dev.json lists
# what generation leaves out.
#
# bench and soak run the framework's own fixture service (test/proto/fixture/), built into dist-bench/ as
# `make build` builds the service into dist/: they measure the framework, whatever the protos and handlers are.

.PHONY: bench bench-service soak

bench: $(GEN_STAMP) ## Load benchmarks of the framework beside bare grpc-js, bare fastify, connect-node; SSE, start-up; overload at 2x capacity (~7 min)
	$(load-tools)
	$(build-bench)
	@# 1,000 SSE clients need as many sockets on each side.
	@ulimit -n 65536 2>/dev/null || ulimit -n 8192 2>/dev/null || true; node --import tsx bench/run.ts
	@# Overload (SPEC 4.13): capacity, then open-loop load at half and twice it, protection on and off (~2 min).
	node --import tsx bench/overload.ts

soak: $(GEN_STAMP) ## Mixed gRPC + HTTP load on the compiled framework, 30 s warm-up + SOAK_SECONDS (60): failures, status counts, req/s, RSS trend
	$(load-tools)
	$(build-bench)
	node --import tsx bench/soak.ts


bench-service: dist/main.js ## What a generated repo's make bench does: this service's own unary RPCs, h2load and wrk, against the saved baseline
	node --import tsx scripts/bench.ts

# h2load and wrk, from Debian's nghttp2-client and wrk, when missing.
define load-tools
@command -v h2load >/dev/null && command -v wrk >/dev/null || { \
	echo "installing h2load and wrk: apt-get install nghttp2-client wrk"; \
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get update -qq && \
	$(if $(filter 0,$(shell id -u)),,sudo) apt-get install -y -qq --no-install-recommends nghttp2-client wrk >/dev/null; }
endef

define build-bench
node --import tsx bench/build.ts dist-bench
endef

