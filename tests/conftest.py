"""Shared fixtures: a hermetic environment per test (no `CREFN_*`, `KUBECONFIG` or `K_SINK`), one real API
server per session, a namespace per test, functions served by functions-framework over real HTTP (one
process per target and settings, shared by the session), every lifecycle function served as its own
ServiceAccount (bound exactly as `knative/` binds it), a relay standing where resync's `K_SINK` points, and
lifecycle worlds.

Markers added here: `kube` to every test that uses the session's API server, so `pytest -m "not kube"`
needs none; `process` to every test that serves functions or the recorder (others that start a program
carry it); `make test-fast` leaves out both. `upstream` to every test whose subject is the upstream CRDs
themselves (it uses `upstream_crds`), skipped without them under one summary line (with `CI=true` the run fails
instead); every other real-API test runs on the upstream CRDs when they are there, else on the project's fallback
ones. Under pytest-xdist (`make test`) each worker starts its own API server and functions; a module's tests go to
one worker, the `stack` tests all to one. Every process of the run dies with the pytest that started it, and the
run fails if it leaves a process or a temporary directory behind (`pytest_configure`, `pytest_sessionfinish`).
In full: docs/development.md#the-test-suite.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import gc
import os
import random
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
import uuid
import warnings
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from functions.runtime.errors import CrefnError
from functions.runtime.gateway import Gateway
from functions.runtime.resources import NAMESPACES, Resource, cre_jobs
from localstack.cluster.apiserver import ClusterError, LocalCluster, default_crd_dir, free_port
from localstack.eventing.broker import LocalBroker
from localstack.manifests import render, service_account_user
from localstack.processes import end_with_parent, spawn, stop_process
from localstack.serving import ServedFunction, wait_for_port
from tests.support.inprocess import InProcessFunction
from tests.support.layout import is_pure
from tests.support.lineage import MARK, kill_all, left_after
from tests.support.world import LIFECYCLE, Relay, World, make_world, serve_relay

SERVICE_ACCOUNTS = ("crefn-phase", "crefn-launch", "crefn-measurements", "crefn-measure", "crefn-status",
                    "crefn-restart", "crefn-timeout", "crefn-nodehealth", "crefn-validate", "crefn-resync",
                    "crefn-workloadrun", "crefn-alert", "crefn-parity", "crefn-apiserversource")
FUNCTION_USERS = (*(service_account_user(sa) for sa in SERVICE_ACCOUNTS), "nobody")
SHARED_CLUSTER = os.environ.get("CREFN_TEST_CLUSTER", "")  # read before `hermetic_env` clears CREFN_*
# `make mutation`: functions are served in this process (tests.support.inprocess), where the mutant is
# switched on and the tests that reach it are traced; tests that need a process of their own are left out
IN_PROCESS_ONLY = bool(os.environ.get("CREFN_TEST_IN_PROCESS"))
UPSTREAM_CRDS = default_crd_dir()  # read before `hermetic_env` clears CREFN_*
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
LEFT_PROCESS_GRACE = 35.0
"""Seconds the run's processes have to end after the session: a gunicorn worker leaves within a second of its
arbiter, once it has finished the request it serves (at most gunicorn's 30 s graceful timeout)."""
PROCESS_FIXTURES = frozenset({"serve", "recorder"})
"""Fixtures that start programs of their own: a test using one, directly or through others, is marked `process`."""
NO_UPSTREAM = (f"the upstream CRDs: {UPSTREAM_CRDS} holds none (put them in ../shared/upstream beside the checkout, "
               "or set CREFN_UPSTREAM_CRDS)")


CLUSTER_ROLES = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding",
                                 namespaced=False)


@pytest.fixture(autouse=True)
def hermetic_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("CREFN_") or key in ("KUBECONFIG", "K_SINK"):
            monkeypatch.delenv(key)


CONNECTED: list[weakref.ref[Gateway]] = []
"""Every Gateway made in this test process, in order (`closes_its_gateways`), not kept alive by being listed."""
_gateway_init = Gateway.__init__


def _recorded_init(self: Gateway, *args: Any, **kwargs: Any) -> None:
    _gateway_init(self, *args, **kwargs)
    CONNECTED.append(weakref.ref(self))


Gateway.__init__ = _recorded_init  # type: ignore[method-assign]

SHARED_IN_PROCESS: list[InProcessFunction] = []
"""The functions `serve` runs in this process for the whole session (`make mutation`): their gateways, made by
the first test that calls them, serve the tests after it, and are closed with them at the session's end."""
BROKERS: list[LocalBroker] = []
"""Every local Broker made in this test process and not yet closed after its test (`closes_its_gateways`)."""
_broker_init = LocalBroker.__init__


def _recorded_broker_init(self: LocalBroker, *args: Any, **kwargs: Any) -> None:
    _broker_init(self, *args, **kwargs)
    BROKERS.append(self)


LocalBroker.__init__ = _recorded_broker_init  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def closes_its_gateways() -> Iterator[None]:
    """Every Gateway the test made (itself, its function-scoped fixtures, or a function it runs in this process)
    is closed after it: its connections are closed then, rather than by the garbage collector at a moment of
    its choosing, which warns of each one still open (an error here) in whatever test is running then. So is
    every local Broker it made (a World's): its threads, its sockets and the temporary directory of its dead
    letters go with the test."""
    mark, brokers = len(CONNECTED), len(BROKERS)
    yield
    while len(BROKERS) > brokers:
        BROKERS.pop().close()
    shared = {id(f._ctx._gateway) for f in SHARED_IN_PROCESS if f._ctx is not None and f._ctx._gateway is not None}
    while len(CONNECTED) > mark:
        if (gateway := CONNECTED.pop()()) is not None and id(gateway) not in shared:
            gateway.close()


@pytest.fixture(scope="module", autouse=True)
def collects_its_garbage() -> Iterator[None]:
    """The garbage collector run at the end of each module: a resource its tests left to it unclosed fails the
    module that left it. (A ResourceWarning from a collection at any other moment names no culprit, only the test
    running then: it is shown, not made an error; pyproject.toml's `filterwarnings`.)"""
    yield
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        gc.collect()
    left = [described(w) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not left, f"this module's tests left to the garbage collector, still open: {'; '.join(left)}"


def described(warning: warnings.WarningMessage) -> str:
    """A ResourceWarning's message, and where its object was made when `PYTHONTRACEMALLOC` is set."""
    made = tracemalloc.get_object_traceback(warning.source) if warning.source is not None else None
    return str(warning.message) + (f" (made at {' > '.join(map(str, made))})" if made else "")


OWNED: dict[str, str] = {}
"""What this process owns as the run's first pytest (not an xdist worker, not a session inside a test's): the
lineage token its every process carries (`tests.support.lineage`) and the private temporary directory."""


def pytest_configure(config: pytest.Config) -> None:
    """An xdist worker dies with the pytest that started it, however that one dies (its API server and functions
    then die with it: `localstack.processes`). The run's first pytest marks its lineage and gives the run a
    temporary directory of its own (`TMPDIR`), which `pytest_sessionfinish` checks and removes."""
    choose_fuzz_seed()
    if hasattr(config, "workerinput"):
        end_with_parent()
        return
    if os.environ.get(MARK):  # a session started by a test: the test checks what it leaves
        return
    OWNED["before"] = os.environ.get("TMPDIR", "")
    OWNED["token"] = os.environ[MARK] = uuid.uuid4().hex
    OWNED["tmp"] = os.environ["TMPDIR"] = tempfile.mkdtemp(prefix="crefn-tests-")
    tempfile.tempdir = None  # taken from TMPDIR again, by this process too


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # outermost: after xdist has stopped its workers
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """The run fails if it leaves a process or a temporary directory behind, pass or fail; either is removed."""
    yield
    if not OWNED:
        return
    problems = []
    if left := left_after(OWNED["token"], LEFT_PROCESS_GRACE, exclude=frozenset({os.getpid()})):
        kill_all(left)
        problems.append(f"{len(left)} processes outlived the test session (killed now): "
                        + "; ".join(f"{pid} {cmd[:160]}" for pid, cmd in sorted(left.items())))
    tmp = Path(OWNED["tmp"])
    given = session.config.option.basetemp
    strays = sorted(p.name for p in tmp.iterdir() if not p.name.startswith("pytest-of-")) if tmp.is_dir() else []
    if strays:
        problems.append(f"temporary files or directories left behind (removed now): {', '.join(strays)}")
    if not given or not Path(given).resolve().is_relative_to(tmp.resolve()):
        shutil.rmtree(tmp, ignore_errors=True)
    end_ownership()
    if problems:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for problem in problems:
            if reporter is not None:
                reporter.write_line(f"ERROR: {problem}", red=True, bold=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def end_ownership() -> None:
    """The process as it was before the run: a next session in the same process (mutmut runs several) owns a
    lineage and a temporary directory of its own, never the removed one."""
    before = OWNED.pop("before", "")
    if before:
        os.environ["TMPDIR"] = before
    else:
        os.environ.pop("TMPDIR", None)
    os.environ.pop(MARK, None)
    tempfile.tempdir = None
    OWNED.clear()


def pytest_sessionstart(session: pytest.Session) -> None:
    if IN_PROCESS_ONLY:  # a mutant's session is forked from a process that ran the tests unmutated: forget
        for name, module in list(sys.modules.items()):  # what its caches hold (compiled CEL, parsed rules)
            if name.split(".")[0] in ("functions", "events"):
                for value in list(vars(module).values()):
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()


@functools.cache
def upstream_found() -> bool:
    return UPSTREAM_CRDS.is_dir() and any(UPSTREAM_CRDS.rglob("*.yaml"))


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by `kube`, and before pytest-xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        # fixturenames is the closure: fixtures that use `cluster` (gateway, namespace, functions, ...) count
        if "cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kube)
        if "upstream_crds" in getattr(item, "fixturenames", ()):  # the subject is the upstream schemas: every
            item.add_marker(pytest.mark.upstream)  # other real-API test runs on the fallback CRDs without them
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.process)
    if IN_CI and not upstream_found() and any(item.get_closest_marker("upstream") for item in items):
        needing = sum(bool(item.get_closest_marker("upstream")) for item in items)
        raise pytest.UsageError(f"CI: {needing} tests need {NO_UPSTREAM}")
    if IN_PROCESS_ONLY:  # functions are served in this process: leave out what needs a process of its own,
        # and for a mutant of the rules (pure modules) every test that needs the API server: the unit tests judge it
        rules = is_pure(os.environ.get("MUTANT_UNDER_TEST", ""))
        apart = [item for item in items if item.get_closest_marker("own_process")
                 or "recorder" in getattr(item, "fixturenames", ())
                 or (rules and item.get_closest_marker("kube"))]
        if apart:
            config.hook.pytest_deselected(items=apart)
            items[:] = [item for item in items if item not in apart]
    if config.getoption("dist", "no") == "loadgroup":
        group_for_workers(items)


def group_for_workers(items: list[pytest.Item]) -> None:
    """One xdist group per module, and one for every `stack` test, handed out first: a worker runs that
    group's tests one after the other while the other works through the modules."""
    for item in items:
        stack = item.get_closest_marker("stack") is not None
        item.add_marker(pytest.mark.xdist_group("stack" if stack else item.nodeid.split("::")[0]))
    items.sort(key=lambda item: item.get_closest_marker("stack") is None)  # stable: the rest keep their order


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before any fixture starts (the session's API server): a test that needs the upstream CRDs is skipped
    without them; the reason is one line, so `-ra` folds every such skip into one."""
    if item.get_closest_marker("upstream") and not upstream_found():
        pytest.skip(f"needs {NO_UPSTREAM}")


@pytest.fixture
def upstream_crds(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The upstream CRDs' directory, also as `CREFN_UPSTREAM_CRDS` for the test (and what it starts)."""
    monkeypatch.setenv("CREFN_UPSTREAM_CRDS", str(UPSTREAM_CRDS))
    return UPSTREAM_CRDS


@pytest.fixture(autouse=True)
def shared_cluster_turn(request: pytest.FixtureRequest) -> Iterator[None]:
    """With `CREFN_TEST_CLUSTER`, the tests of concurrent sessions that use it take turns: a Node names one
    stand-in kubelet (the last session's to register it), so two tests placing pods on the same Node at once
    would read each other's logs."""
    if not SHARED_CLUSTER or request.node.get_closest_marker("kube") is None:
        yield
        return
    with open(Path(SHARED_CLUSTER) / "turn.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """etcd + kube-apiserver with the upstream CRDs; failing to start fails the tests (never a skip).
    With `CREFN_TEST_CLUSTER` (a directory: `make mutation`), the one `tests.mutation.cluster` keeps running."""
    if SHARED_CLUSTER:
        attached = LocalCluster.attach(Path(SHARED_CLUSTER))
        yield attached
        attached.stop()
        return
    try:
        started = start_cluster(tmp_path_factory.mktemp("cluster"))
    except ClusterError:  # a port found free was taken before etcd or kube-apiserver bound it (by another
        started = start_cluster(tmp_path_factory.mktemp("cluster"))  # worker's): once more, on new ports
    try:
        apply_rbac(started)
        yield started
    finally:
        started.stop()


def start_cluster(work_dir: Path) -> LocalCluster:
    return LocalCluster(work_dir, UPSTREAM_CRDS, users=FUNCTION_USERS,
                         cre_groups=("nvcre.nvidia.com", "cre.nvidia.com")).start()


def apply_rbac(cluster: LocalCluster) -> None:
    """Load the ClusterRoles and bindings of knative/base (and the legacy group's) into the API server:
    functions served in the tests authenticate as their ServiceAccounts and get exactly those rights."""
    gw = cluster.gateway()
    try:
        for path, suffix in (("base", ""), ("installs/legacy-group", "-legacy")):
            for doc in render(path):
                if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
                    continue
                res = CLUSTER_ROLES if doc["kind"] == "ClusterRole" else CLUSTER_ROLE_BINDINGS
                doc["metadata"]["name"] += suffix
                if doc["kind"] == "ClusterRoleBinding":
                    doc["roleRef"]["name"] += suffix
                gw.create(res, None, doc)
    finally:
        gw.close()


@pytest.fixture(scope="session")
def gateway(cluster: LocalCluster) -> Iterator[Gateway]:
    gw = cluster.gateway()
    yield gw
    gw.close()


@pytest.fixture
def namespace(gateway: Gateway, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own; its CRE Jobs are deleted after the test (there is no namespace
    controller to do it), so that no later resync tick, which lists Jobs across namespaces, meets them."""
    name = f"t-{request.node.name[:40].lower().replace('_', '-').strip('-')}-{uuid.uuid4().hex[:6]}"
    name = "".join(c if c.isalnum() or c == "-" else "-" for c in name)
    gateway.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    yield name
    with contextlib.suppress(CrefnError):  # best effort: a test may have left the API server unusable
        for group in ("nvcre.nvidia.com", "cre.nvidia.com"):
            for job in gateway.list_all(cre_jobs(group), name):
                gateway.delete(cre_jobs(group), name, job["metadata"]["name"])


@pytest.fixture(scope="session")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., ServedFunction | InProcessFunction]]:
    """serve(target, **env) → a running functions-framework server, shared across the session."""
    running: dict[tuple[str, tuple[tuple[str, str], ...]], ServedFunction | InProcessFunction] = {}
    logs = tmp_path_factory.mktemp("functions")

    def start(target: str, **env: str) -> ServedFunction | InProcessFunction:
        key = (target, tuple(sorted(env.items())))
        if key not in running:
            log = Path(logs) / f"{target}-{len(running)}.log"
            served = (InProcessFunction(target, env, log) if IN_PROCESS_ONLY
                      else ServedFunction(target, env, log)).start()
            if isinstance(served, InProcessFunction):
                SHARED_IN_PROCESS.append(served)
            running[key] = served
        return running[key]

    yield start
    for served in running.values():  # the session is over: no graceful stop (about 150 processes on 2 cores)
        served.kill() if isinstance(served, ServedFunction) else served.terminate()
    for served in running.values():
        served.stop()


@pytest.fixture
def recorder(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`cre-fn record` on a free port: (its URL, the JSONL file it appends to)."""
    port, out = free_port(), tmp_path / "recorded.jsonl"
    proc = spawn([sys.executable, "-m", "functions.cli", "record", "--host", "127.0.0.1", "--port", str(port),
                  "--out", str(out)], stderr=subprocess.DEVNULL)
    try:
        assert wait_for_port(port)
        yield f"http://127.0.0.1:{port}/", out
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def relay() -> Iterator[Relay]:
    with serve_relay() as r:
        yield r


@pytest.fixture(scope="session")
def functions(serve: Callable[..., ServedFunction], cluster: LocalCluster,
              relay: Relay) -> Callable[..., dict[str, str]]:
    """functions(**settings) → {target: url} for every lifecycle function, served with those settings."""

    def start(**settings: str) -> dict[str, str]:
        urls = {}
        for target in LIFECYCLE:
            user = service_account_user(f"crefn-{target}")  # least privilege: the function's own RBAC
            env = {"CREFN_KUBECONFIG": str(cluster.kubeconfig_for(user)), "K_SINK": relay.url,
                   "CREFN_LOG_LEVEL": "WARNING", "CREFN_RESTART_GRACE_SECONDS": "0", **settings}
            urls[target] = serve(target, **env).url
        return urls

    return start


@pytest.fixture
def world(functions: Callable[..., dict[str, str]], gateway: Gateway, namespace: str, relay: Relay,
          cluster: LocalCluster) -> Iterator[Callable[..., World]]:
    """world(urls=None, **options) → a World in this test's namespace (urls: `functions()` by default;
    options: those of `make_world`; the Trainer places its pods behind the cluster's stand-in kubelet);
    resync's events for the namespace go to the latest world's Broker."""

    def make(urls: dict[str, str] | None = None, **options: Any) -> World:
        options.setdefault("kubelet", cluster.kubelet)
        made = make_world(gateway, namespace, functions() if urls is None else urls, **options)
        relay.attach(made)
        return made

    yield make
    relay.attach(None)


def choose_fuzz_seed() -> None:
    """The fuzz tests' seed (tests/system/test_fuzz.py): `FUZZ_SEED`, else a fresh one, chosen once by the run's
    first pytest, before pytest-xdist starts its workers, which inherit it."""
    chosen = os.environ.get("FUZZ_SEED", "").strip() or str(random.SystemRandom().randrange(2**32))
    if not chosen.isdigit():
        raise pytest.UsageError(f"FUZZ_SEED must be a non-negative integer, not {chosen!r}")
    os.environ["FUZZ_SEED"] = chosen


def pytest_report_header(config: pytest.Config) -> str:
    chosen = os.environ["FUZZ_SEED"]
    return f"fuzz: FUZZ_SEED={chosen} (with the same FUZZ_EXAMPLES, it generates this run's events again)"
