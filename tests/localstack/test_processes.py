"""`localstack.processes`: a child dies with its parent however the parent dies, and stops with its group."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from localstack.processes import SIGNAL_POLL, die_with_parent, run, spawn, stop_together, until_interrupted
from tests.support.lineage import MARK, kill_all, left_after, marked

pytestmark = pytest.mark.process

PARENT = """
import sys, time
from localstack.processes import spawn
children = [spawn([sys.executable, "-c", "import time; time.sleep(300)"]) for _ in range(2)]
print(" ".join(str(c.pid) for c in children), flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead and waiting to be collected, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while (running := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running


def lineage_env(token: str) -> dict[str, str]:
    return {**os.environ, MARK: token}


def test_children_die_when_their_parent_is_sigkilled() -> None:
    token = uuid.uuid4().hex
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True,
                              env=lineage_env(token))
    assert parent.stdout is not None
    children = [int(pid) for pid in parent.stdout.readline().split()]
    parent.stdout.close()
    assert len(children) == 2 and all(alive(pid) for pid in children)
    parent.kill()  # it can stop nothing itself
    parent.wait()
    still = wait_gone(children, 5)
    kill_all(marked(token))
    assert not still, f"outlived their SIGKILLed parent: {still}"


def test_a_child_whose_parent_is_already_gone_leaves_at_once() -> None:
    """The parent may die between the fork and the arming of the signal: the child then finds another parent and
    exits before it runs anything."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"],
                            preexec_fn=die_with_parent(os.getpid() + 1_000_000))  # not its parent
    assert proc.wait(timeout=10) == 1


def test_a_spawned_child_leads_a_group_of_its_own() -> None:
    proc = spawn([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        assert os.getsid(proc.pid) == proc.pid  # a Ctrl-C at the terminal reaches the parent alone
    finally:
        stop_together([proc], grace=1)
    assert proc.returncode == -signal.SIGTERM


def test_stop_together_kills_what_ignores_sigterm_after_one_grace_for_all() -> None:
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print(flush=True); time.sleep(300)"
    procs = [spawn([sys.executable, "-c", stubborn], stdout=subprocess.PIPE) for _ in range(3)]
    for proc in procs:  # each has set its handler
        assert proc.stdout is not None and proc.stdout.readline() == b"\n"
    began = time.monotonic()
    stop_together(procs, grace=1.0)
    took = time.monotonic() - began
    for proc in procs:
        assert proc.stdout is not None
        proc.stdout.close()
    assert [p.returncode for p in procs] == [-signal.SIGKILL] * 3
    assert took < 3 * 1.0, f"{took:.1f}s: the grace is one for all, not one each"


def test_run_stops_the_whole_group_on_a_timeout() -> None:
    token = uuid.uuid4().hex
    with pytest.raises(subprocess.TimeoutExpired):
        run(["sh", "-c", "sleep 300 & sleep 300"], timeout=0.5, env=lineage_env(token))
    left = left_after(token, 5)
    kill_all(left)
    assert not left, left


def test_run_answers_as_subprocess_run() -> None:
    done = run(["sh", "-c", "echo out; echo err >&2; exit 3"], text=True)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def waiting(thread: int) -> bool:
    """Whether that thread is in `until_interrupted`."""
    frame = sys._current_frames().get(thread)
    while frame is not None and frame.f_code.co_name != "until_interrupted":
        frame = frame.f_back
    return frame is not None


def test_a_ctrl_c_another_thread_takes_still_ends_the_wait() -> None:
    """The kernel may hand a process's SIGINT to any of its threads; Python acts on it in the main thread only.
    `until_interrupted` (the stack's `--keep` wait) raises KeyboardInterrupt within a look or two; a main thread
    in one long sleep would not, and only the fallback below (SIGINT to the main thread itself) would end it."""
    main = threading.get_ident()
    ended, late = threading.Event(), threading.Event()

    def another_thread() -> None:
        deadline = time.monotonic() + 30
        while not waiting(main) and time.monotonic() < deadline:  # the main thread in the wait, then the signal
            ended.wait(0.01)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # taken here, not by the main thread
        if not ended.wait(5 + 10 * SIGNAL_POLL):
            late.set()
            signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        thread = threading.Thread(target=another_thread)
        with pytest.raises(KeyboardInterrupt):
            thread.start()
            until_interrupted()
        ended.set()
        thread.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not late.is_set(), "the wait saw the signal only once the main thread itself was signalled"


def test_a_command_started_with_ctrl_c_ignored_still_stops_on_it() -> None:
    """What a shell without job control does to a background command (`nohup … &`, a script, a CI step): SIGINT
    ignored, inherited through exec. The stack's commands take it back (`interruptible`), so a Ctrl-C, or the
    SIGINT a test sends, stops them."""
    script = ("import signal; from localstack.processes import interruptible, until_interrupted; "
              "print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, flush=True); interruptible(); "
              "print('waiting', flush=True); until_interrupted()")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert proc.stdout is not None
        assert [proc.stdout.readline().strip() for _ in range(2)] == ["True", "waiting"]  # ignored, as inherited
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == -signal.SIGINT  # KeyboardInterrupt, uncaught: Python ends by SIGINT
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
