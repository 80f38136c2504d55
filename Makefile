# The two commands of the README's quickstart. Both set everything up from scratch.
#   make demo   - the main job: the refund agent judged by an embedded collector
#   make test   - semconv, content-docs, config-docs and rules-schema freshness, lint, strict types and the whole
#                 test suite, end-to-end tests against real Jaeger, the OpenTelemetry Collector and
#                 Prometheus included
.PHONY: demo test bootstrap backends compiled lint typecheck semconv semconv-check content-docs content-docs-check config-docs config-docs-check rules-schema rules-schema-check pytest pytest-compiled bench bench-instrumentation bench-langgraph bench-engine bench-decode bench-collector bench-collector-graders profile-collector bench-scaleout bench-accuracy bench-frameworks dev-labels dev-labels-check

VENV := .venv
PY := $(VENV)/bin/python

bootstrap:
	@bash scripts/bootstrap.sh

backends:
	@bash scripts/build-backends.sh

# The mypyc-compiled wheel (what a release ships) in dist/compiled, installed in .venv-compiled.
compiled: bootstrap
	@bash scripts/build-compiled.sh

demo: bootstrap
	$(VENV)/bin/tracejudge demo

semconv: bootstrap
	$(PY) semconv/generate.py

semconv-check: bootstrap
	$(PY) semconv/generate.py --check

# docs/privacy.md's table of what counts as content, from src/tracejudge/content.py.
content-docs: bootstrap
	$(PY) scripts/gen_content_docs.py

content-docs-check: bootstrap
	$(PY) scripts/gen_content_docs.py --check

# docs/configuration.md's settings table and collector/tracejudge.example.yaml, from the
# settings declared in src/tracejudge/collector/config.py.
config-docs: bootstrap
	$(PY) -m tracejudge.collector.config_docs

config-docs-check: bootstrap
	$(PY) -m tracejudge.collector.config_docs --check

# The shipped rules JSON Schema, generated from the check declarations (CheckSpec).
rules-schema: bootstrap
	$(PY) scripts/gen_rules_schema.py

rules-schema-check: bootstrap
	$(PY) scripts/gen_rules_schema.py --check

lint: bootstrap
	$(VENV)/bin/ruff check hatch_build.py src tests semconv bench examples scripts
	$(VENV)/bin/ruff format --check hatch_build.py src tests semconv bench examples scripts

typecheck: bootstrap
	$(VENV)/bin/mypy hatch_build.py src tests

# One worker per core (pytest-xdist); a module's tests stay on one worker, so module fixtures
# (a built wheel, a Jaeger) are made once.
XDIST := -n $(or $(TEST_WORKERS),auto) --dist loadscope

pytest: bootstrap backends
	$(PY) -m pytest $(XDIST)

# The judging path again, on the compiled wheel: it must behave exactly like the sources.
COMPILED_TESTS := tests/model tests/otlp tests/engine tests/collector tests/report tests/cli tests/e2e

pytest-compiled: compiled backends
	.venv-compiled/bin/python -m pytest $(XDIST) --expect-compiled $(COMPILED_TESTS)

# semconv-check, rules-schema-check, lint, typecheck, then both builds' suites: the Go backends build in the
# background while everything that does not need them runs (scripts/test.sh says how).
test:
	@COMPILED_TESTS="$(COMPILED_TESTS)" bash scripts/test.sh

bench-instrumentation:
	@bash bench/setup-peers.sh
	.venv-bench/bin/python bench/bench_instrumentation.py

# Whole agent runs on the OpenAI Agents SDK and LangGraph, tracejudge next to the official OTel
# and OpenInference instrumentations.
bench-frameworks:
	@bash bench/setup-peers.sh
	.venv-bench/bin/python bench/bench_frameworks.py

# The LangChain handler's per-run overhead on a LangGraph run, next to OpenInference's.
bench-langgraph:
	@bash bench/setup-peers.sh
	.venv-bench/bin/python bench/bench_langgraph.py

# The engine and decoders on both builds: pure Python (.venv) and the compiled wheel.
bench-engine: bootstrap compiled
	$(PY) bench/bench_engine.py
	.venv-compiled/bin/python bench/bench_engine.py

bench-decode: bootstrap compiled
	$(PY) bench/bench_decode.py
	.venv-compiled/bin/python bench/bench_decode.py

bench-collector: bootstrap compiled backends
	$(PY) bench/bench_collector.py --anchor

# Where the collector's CPU goes, by stage: py-spy on the pure-Python serve under the collector
# benchmark's load (issue 20); --build NAME=PATH compares another commit's tracejudge.
profile-collector: bootstrap
	@bash bench/setup-peers.sh
	$(PY) bench/profile_collector.py --py-spy .venv-bench/bin/py-spy

# The deterministic verdicts' rate with a grader on every run, its judge held or answering,
# next to none (issue 21: graders run off the decision path); builds and modes alternating.
bench-collector-graders: bootstrap compiled
	$(PY) bench/bench_collector.py --graders off,held,answering --rounds 2 --throughput-only

# Sizing (docs/deployment.md#sizing): one instance alone, then the shipped load balancer (the
# real OTel Collector) in front of 2 and 3 instances; CPU per 1,000 spans of each process.
bench-scaleout: bootstrap compiled backends
	$(PY) bench/bench_scaleout.py --plan 10000 --plan 100000

# Judging accuracy on the real tau-bench airline runs (examples/airline): policy rules alone,
# then with the cases file; prints detection, false alarms and agreement against the targets.
bench-accuracy: bootstrap  # both domains: tau-bench airline, tau2-bench retail
	$(PY) bench/bench_accuracy.py

# The labels files of both dev sets (examples/*/labels.jsonl), for `tracejudge validate`: the
# benchmarks' rewards and the READMEs' listed breaches, never tracejudge's verdicts.
dev-labels: bootstrap
	$(PY) bench/dev_labels.py

dev-labels-check: bootstrap
	$(PY) bench/dev_labels.py --check

# Every benchmark, one after the other; results belong in docs/performance.md.
bench: bench-instrumentation bench-langgraph bench-frameworks bench-decode bench-engine bench-collector bench-scaleout bench-accuracy
