"""The suite's hang watchdog: a test that runs past its budget (setup, call and teardown,
including the higher-scoped fixtures it sets up) ends the run with a report that names it and
shows every thread's Python stack, instead of stalling CI forever.

A budget is ``@pytest.mark.hang_budget(seconds)`` on the test (or its module/class), else the
entry of ``path_budgets`` for its file or a directory above it, else the default.

Two layers, because no single one both names the test and works in every hang:

- A Python thread wakes at the budget and writes "pytest watchdog: <nodeid> ran past its N s
  hang budget", every thread's stack, to the real stderr and to a report file, then exits
  with EXIT_CODE. It needs the GIL: enough for a test stuck in a subprocess, a sleep, a lock,
  or C++ that releases the GIL (the tpu bindings' blocking calls and torch's ops do).
- faulthandler.dump_traceback_later, ``backstop_grace_s`` later, for C++ that hangs while
  holding the GIL: its C thread needs no GIL, but it cannot print a header, so its report
  ("Timeout (H:MM:SS)!" and the stacks, which show the test function's frame) goes to the
  real stderr only and it exits with status 1.

Both write to a duplicate of fd 2 taken while pytest's capture is suspended: under the
default ``--capture=fd`` pytest points fd 2 (and so sys.__stderr__) at a temporary file, and
a process that exits mid-test never prints what that file captured.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

MARKER = "hang_budget"
_BUDGET = pytest.StashKey[float]()
EXIT_CODE = 70  # not one of pytest's own exit codes (0-5), nor faulthandler's 1


def install(config: pytest.Config, default_budget_s: float,
            path_budgets: dict[Path, float] | None = None,
            backstop_grace_s: float = 30.0) -> None:
    """Registers the marker and, unless a debugger is requested, the watchdog; call it from
    a conftest's ``pytest_configure``."""
    config.addinivalue_line(
        "markers", f"{MARKER}(seconds): the hang watchdog ends the run if this test (with the "
                   "fixtures it sets up) runs longer than this; for tests that are long by design")
    if config.getoption("usepdb", False) or config.getoption("trace", False):
        return  # a debugging session must not be killed at the budget
    config.pluginmanager.register(
        HangWatchdog(config, default_budget_s, path_budgets or {}, backstop_grace_s),
        "hang_watchdog")


def _dup_real_stderr(config: pytest.Config) -> int:
    capman = config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
        return os.dup(2)


class HangWatchdog:
    def __init__(self, config: pytest.Config, default_budget_s: float,
                 path_budgets: dict[Path, float], backstop_grace_s: float):
        self._default = float(default_budget_s)
        self._paths = {Path(p).resolve(): float(s) for p, s in path_budgets.items()}
        self._grace = float(backstop_grace_s)
        self._stderr_fd = _dup_real_stderr(config)
        self._capman = config.pluginmanager.getplugin("capturemanager")
        # For the report: a run the watchdog ends never prints pytest's own summary.
        self._finished = 0
        self._failed: list[str] = []
        self.report_path = Path(tempfile.gettempdir()) / f"pytest-hang-{os.getpid()}.txt"
        self._cond = threading.Condition()
        self._nodeid: str | None = None
        self._budget = 0.0
        self._deadline = 0.0
        self._stopped = False
        self._thread = threading.Thread(target=self._watch, name="pytest hang watchdog",
                                        daemon=True)
        self._thread.start()

    # --- budgets ---------------------------------------------------------------------------

    def budget_for(self, item: pytest.Item) -> float:
        marker = item.get_closest_marker(MARKER)
        if marker is not None:
            seconds = marker.args[0] if marker.args else marker.kwargs.get("seconds")
            if not isinstance(seconds, (int, float)) or seconds <= 0:
                raise pytest.UsageError(f"{item.nodeid}: {MARKER} needs a positive number of "
                                        f"seconds, got {marker}")
            return float(seconds)
        path = Path(item.path).resolve()
        for place in (path, *path.parents):
            if place in self._paths:
                return self._paths[place]
        return self._default

    # --- arming ----------------------------------------------------------------------------

    def arm(self, nodeid: str, budget_s: float) -> None:
        with self._cond:
            self._nodeid, self._budget = nodeid, budget_s
            self._deadline = time.monotonic() + budget_s
            self._cond.notify()
        faulthandler.dump_traceback_later(budget_s + self._grace, exit=True, file=self._stderr_fd)

    def disarm(self) -> None:
        faulthandler.cancel_dump_traceback_later()
        with self._cond:
            self._nodeid = None

    def _rearm_backstop(self) -> None:
        with self._cond:
            if self._nodeid is None:
                return
            remaining = max(0.0, self._deadline - time.monotonic())
        faulthandler.dump_traceback_later(remaining + self._grace, exit=True,
                                          file=self._stderr_fd)

    def _watch(self) -> None:
        with self._cond:
            while not self._stopped:
                if self._nodeid is None:
                    self._cond.wait()
                    continue
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                self._report_and_exit(self._nodeid, self._budget)

    def _report_and_exit(self, nodeid: str, budget_s: float) -> None:
        header = (f"\n{'=' * 28} pytest watchdog {'=' * 28}\n"
                  f"pytest watchdog: {nodeid} ran past its {budget_s:g} s hang budget; "
                  "every thread's Python stack, most recent call first:\n\n").encode()
        footer = self._captured_output() + (
            f"\npytest watchdog: before it, {self._finished} test(s) ran, "
            f"{len(self._failed)} failed{': ' if self._failed else ''}{', '.join(self._failed)}\n"
            f"pytest watchdog: {nodeid} ran past its {budget_s:g} s hang budget; ended the run "
            f"with exit status {EXIT_CODE}. This report is also in {self.report_path}\n"
            f"(a test that is long by design takes @pytest.mark.{MARKER}(seconds))\n")
        footer = footer.encode(errors="replace")
        targets = [self._stderr_fd]
        with contextlib.suppress(OSError):
            targets.append(os.open(self.report_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        for fd in targets:
            with contextlib.suppress(OSError):  # e.g. a closed pipe: still try the others
                os.write(fd, header)
                faulthandler.dump_traceback(file=fd, all_threads=True)
                os.write(fd, footer)
        os._exit(EXIT_CODE)

    def _captured_output(self, limit: int = 8000) -> str:
        try:  # what pytest captured of the hung test so far (gone once the process exits)
            out, err = self._capman.read_global_capture()
        except Exception:  # no capture (-s), or none to read
            return ""
        return "".join(f"\n----- captured {name} (last {limit} characters) -----\n{text[-limit:]}\n"
                       for name, text in (("stdout", out), ("stderr", err)) if text)

    # --- pytest hooks ----------------------------------------------------------------------

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:  # a malformed marker stops the run before any test, as a usage error
            item.stash[_BUDGET] = self.budget_for(item)

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item):
        budget = item.stash.get(_BUDGET, None)
        self.arm(item.nodeid, self.budget_for(item) if budget is None else budget)
        try:
            return (yield)
        finally:
            self.disarm()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.nodeid not in self._failed[-1:]:
            self._failed.append(report.nodeid)
        if report.when == "teardown":
            self._finished += 1

    @pytest.hookimpl(trylast=True)
    def pytest_exception_interact(self) -> None:
        # pytest's faulthandler plugin cancels faulthandler's pending dump (the backstop)
        # whenever a phase fails: the rest of the item (its teardown) must keep it.
        self._rearm_backstop()

    @pytest.hookimpl(tryfirst=True)
    def pytest_enter_pdb(self) -> None:
        self.disarm()

    def pytest_unconfigure(self) -> None:
        self.disarm()
        with self._cond:
            self._stopped = True
            self._cond.notify()
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            os.close(self._stderr_fd)
