# cre-functions — see README.md. Everything installs itself: `make run`, `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: run test test-fast check bench soak fuzz mutation kube-apiserver deps schemas serve image deploy release lock clean

$(VENV)/.installed: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@echo "[venv] installing cre-functions with its test and dev extras into $(VENV)"
	@$(PY) -m pip install --quiet --disable-pip-version-check -e ".[test,dev]"
	@# the dev stack (localstack/) is not in the wheel: make it importable in this development venv only
	@$(PY) -c 'import pathlib, site; pathlib.Path(site.getsitepackages()[0], "cre_functions_devstack.pth").write_text(str(pathlib.Path.cwd()) + "\n")'
	@touch $@

venv: $(VENV)/.installed
	@# bytecode for the sources, kept fresh: every served process would otherwise compile them as it starts
	@# (about 30 ms of a worker's start) when the environment says not to write it (PYTHONDONTWRITEBYTECODE)
	@$(PY) -m compileall -q -j 0 functions events localstack

deps:
	@bash scripts/system-deps.sh

kube-apiserver: deps
	@bash scripts/kube-apiserver.sh

## The main job: serve the functions locally against a real API server and replay the sample events.
run: venv kube-apiserver
	@$(PY) -m localstack dev

## The whole suite: unit, golden, real-API integration (builds kube-apiserver on first use), in TEST_WORKERS
## processes (pytest-xdist), each with an API server of its own; the slowest tests are listed at the end.
TEST_WORKERS ?= 2
test: venv kube-apiserver
	@$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --durations=15 $(PYTEST_ARGS)

## The inner loop: the unit tests and tables, which need no API server and start no program of their own.
test-fast: venv deps
	@$(PY) -m pytest -m "not kube and not process" -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder $(PYTEST_ARGS)

## Benchmarks against baselines measured in the same run: one table (BENCH_JSON=FILE writes it as JSON;
## BENCH_ROWS=calls,resync runs only those groups of rows: http, resync, lifecycle, calls, tick, scrape).
BENCH_JOBS ?= 1000
BENCH_RESTARTS ?= 100
BENCH_BURST ?= 1000
BENCH_JSON ?=
BENCH_ROWS ?=
## BENCH_PROFILE=FILE: the API server's CPU profile during the burst, written to FILE and summarised.
BENCH_PROFILE ?=
bench: venv deps kube-apiserver
	@BENCH_JOBS=$(BENCH_JOBS) BENCH_RESTARTS=$(BENCH_RESTARTS) BENCH_BURST=$(BENCH_BURST) BENCH_JSON=$(BENCH_JSON) BENCH_ROWS=$(BENCH_ROWS) \
		BENCH_PROFILE=$(BENCH_PROFILE) \
		$(PY) -m localstack.bench

## Hostile events at volume: FUZZ_EXAMPLES generated events per function on the real API server (make test runs 50),
## from FUZZ_SEED (unset: a fresh seed each run; the run's is printed in its header, to run the same events again).
FUZZ_EXAMPLES ?= 10000
FUZZ_SEED ?=
fuzz: venv kube-apiserver
	@FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) FUZZ_SEED=$(FUZZ_SEED) $(PY) -m pytest tests/system/test_fuzz.py $(PYTEST_ARGS)

## Chaos soak: SOAK_JOBS Jobs through the local stack under chaos and kills, once per seed; fails on any violation.
SOAK_JOBS ?= 200
SOAK_SEEDS ?= 1 2 3
soak: venv deps kube-apiserver
	@for seed in $(SOAK_SEEDS); do $(PY) -m localstack soak --jobs $(SOAK_JOBS) --seed $$seed || exit 1; done

## Mutation score: every mutant of the module-level constants of the decisions (functions/domain/ and every
## module of a function folder but its read) against the unit tests, a seeded sample of MUTATION_DECISIONS mutmut
## mutants of the decisions (0: all of them) against the unit tests that reach them, and one of MUTATION_SAMPLE
## mutants of the functions' reads against every test that reaches them (the real-API ones with the functions
## served in the test process, on one API server); per module, survivors. MUTATION_ONLY=constants: the first only;
## MUTATION_ONLY=mutmut: all but the first.
MUTATION_JOBS ?= 2
MUTATION_SAMPLE ?= 150
MUTATION_DECISIONS ?= 600
MUTATION_SEED ?= 1
MUTATION_ONLY ?=
## mutmut and what it brings (setproctitle, which renames gunicorn's processes) live in a venv of their own, layered
## over the test venv, so that `make test` after `make mutation` still sees the processes it starts as they are.
MUTATION_VENV ?= .venv-mutation
$(MUTATION_VENV)/.installed: $(VENV)/.installed
	@python3 -m venv $(MUTATION_VENV)
	@echo "import site; site.addsitedir('$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')')" \
		> "$$($(MUTATION_VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/crefn-test-venv.pth"
	@$(MUTATION_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		"$$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["mutation"][0])')"
	@touch $@
mutation: venv kube-apiserver $(MUTATION_VENV)/.installed
	@PATH="$(abspath $(VENV))/bin:$$PATH" $(MUTATION_VENV)/bin/python -m tests.mutation.run $(MUTATION_JOBS) $(MUTATION_SAMPLE) $(MUTATION_SEED) $(MUTATION_DECISIONS) \
		$(if $(MUTATION_AGAIN),again) \
		$(if $(filter constants,$(MUTATION_ONLY)),constants) $(if $(filter mutmut,$(MUTATION_ONLY)),mutmut)

check: venv
	@$(VENV)/bin/ruff check events functions localstack tests
	@$(VENV)/bin/mypy
	@$(VENV)/bin/lint-imports --no-logo
	@$(PY) -m pytest -q -p no:randomly --no-header -p no:cacheprovider tests/system/test_layout.py

schemas: venv
	@$(PY) -m events.schemas

serve: venv
	@$(PY) -m functions.cli serve $(or $(TARGET),phase)

## The release's version is pyproject.toml's, the one place it is written (CHANGELOG.md has a section for it).
VERSION ?= $(shell python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
IMAGE ?= ghcr.io/crefn/cre-functions:$(VERSION)
COMPONENTS ?=
## The cluster operator's own kubectl (`make deploy` builds no venv): one within a minor version of the cluster.
KUBECTL ?= kubectl
## The kinds `make deploy` prunes: what an install holds but its ConfigMaps, Namespace and dead-letter claim
## (docs/operating.md, "Changing an install"). With Knative Kafka or the Prometheus Operator, add their kinds.
PRUNE_KINDS ?= core/v1/ServiceAccount core/v1/Service apps/v1/Deployment rbac.authorization.k8s.io/v1/ClusterRole \
	rbac.authorization.k8s.io/v1/ClusterRoleBinding rbac.authorization.k8s.io/v1/RoleBinding \
	networking.k8s.io/v1/NetworkPolicy serving.knative.dev/v1/Service eventing.knative.dev/v1/Broker \
	eventing.knative.dev/v1/Trigger sources.knative.dev/v1/ApiServerSource sources.knative.dev/v1/PingSource \
	sources.knative.dev/v1/SinkBinding eventing.knative.dev/v1alpha1/EventPolicy
## Build the single image where a container engine runs (docker or podman).
image:
	@engine=$$(for e in docker podman; do command -v $$e >/dev/null && $$e info >/dev/null 2>&1 && echo $$e && break; done); \
	if [ -z "$$engine" ]; then echo "make image: no running container engine (docker or podman) on this machine"; exit 1; fi; \
	$$engine build --build-arg CREFN_REVISION=$$(git rev-parse HEAD 2>/dev/null || echo unknown) -t $(IMAGE) .

## Apply knative/base and COMPONENTS (knative/components/, comma separated) with IMAGE, over a temporary copy of
## knative/ (scripts/compose.sh), pruning what the previous install had and this one has not:
## make deploy IMAGE=registry.example.com/crefn/cre-functions:0.2.0 COMPONENTS=namespaced,oidc
deploy:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	bash scripts/compose.sh "$$tmp/install" "$(COMPONENTS)" "$(IMAGE)" && \
	$(KUBECTL) apply -k "$$tmp/install" --prune -l app.kubernetes.io/part-of=cre-functions \
		$(addprefix --prune-allowlist=,$(PRUNE_KINDS))

## The release bundle dist/cre-functions-$(VERSION)/ (scripts/release.sh): one YAML per install of knative/installs/
## with IMAGE (a tag, or registry/name@sha256:...), the dashboard, the CHANGELOG section, SHA256SUMS. Rendered by
## the venv's kubectl, so that every machine renders the same bundle.
release: venv
	@VERSION=$(VERSION) IMAGE=$(IMAGE) KUBECTL=$(VENV)/bin/kubectl bash scripts/release.sh

## The image's locks, requirements.lock and build-requirements.lock, from pyproject.toml (scripts/lock.sh);
## UPGRADE=1 moves every pin to the newest release pyproject.toml allows.
lock:
	@UPGRADE=$(UPGRADE) bash scripts/lock.sh

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants
