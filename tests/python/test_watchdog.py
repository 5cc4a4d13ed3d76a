"""The hang watchdog (hang_watchdog.py), in small pytest sessions of their own with budgets of
a second or two: a hung test ends the run with a report naming it and every thread's stack on
the real stderr (pytest's capture would swallow it otherwise) and in a report file."""

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CONFTEST = """
import sys
from pathlib import Path
sys.path.insert(0, {here!r})
import hang_watchdog

def pytest_configure(config):
    hang_watchdog.install(config, default_budget_s={default}, backstop_grace_s={grace},
                          path_budgets={{Path(__file__).parent / p: s for p, s in {paths!r}.items()}})
"""


def run_session(tmp_path: Path, files: dict[str, str], default: float, grace: float = 30,
                paths: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """pytest (default fd capture, strict markers) on ``files`` in a directory of its own;
    returns the result and its wall time."""
    session = tmp_path / "session"
    session.mkdir()
    (session / "pytest.ini").write_text("[pytest]\n")  # no ini file above is picked up
    (session / "conftest.py").write_text(CONFTEST.format(here=str(HERE), default=default,
                                                         grace=grace, paths=paths or {}))
    for name, text in files.items():
        (session / name).write_text(textwrap.dedent(text))
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             "--strict-markers", str(session)],
                            cwd=session, env=env, capture_output=True, text=True, timeout=60)
    return result, time.monotonic() - start


def describe(result: subprocess.CompletedProcess, wall: float) -> str:
    return f"exit {result.returncode} after {wall:.1f} s\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def test_a_test_past_its_budget_is_named_with_every_threads_stack(tmp_path):
    result, wall = run_session(tmp_path, default=5, paths={".": 60}, files={
        "test_a.py": """
            import time
            import pytest

            @pytest.mark.hang_budget(1)
            def test_quick():
                pass

            def test_outlives_the_previous_budget():
                time.sleep(1.5)  # the default 5 s, not test_quick's 1 s
            """,
        "test_b.py": """
            import time
            import pytest

            @pytest.mark.hang_budget(2)  # the marker, not the directory's 60 s
            def test_sleeps_past_its_budget():
                print("captured by pytest")
                time.sleep(30)

            def test_never_runs():
                pass
            """,
    })
    output = describe(result, wall)
    assert result.returncode == 70, output
    assert wall < 20, output
    named = "test_b.py::test_sleeps_past_its_budget ran past its 2 s hang budget"
    assert named in result.stderr, output
    assert "Thread" in result.stderr and "in test_sleeps_past_its_budget" in result.stderr, output
    assert "test_never_runs" not in result.stderr, output
    assert "captured by pytest" in result.stderr, output
    assert "before it, 2 test(s) ran, 0 failed" in result.stderr, output
    report = re.search(r"This report is also in (\S+)", result.stderr)
    assert report, output
    text = Path(report.group(1)).read_text()
    assert named in text
    assert "in test_sleeps_past_its_budget" in text


def test_a_hang_holding_the_gil_still_dumps_every_threads_stack(tmp_path):
    """The Python watchdog thread cannot run while C code holds the GIL (here the regex
    engine, backtracking for ages); faulthandler's backstop reports the test's frame."""
    result, wall = run_session(tmp_path, default=60, grace=1, paths={"test_gil.py": 1}, files={
        "test_gil.py": """
            import re

            def test_holds_the_gil():
                re.match(r"(a+)+$", "a" * 64 + "b")
            """,
    })
    output = describe(result, wall)
    assert result.returncode == 1, output
    assert wall < 20, output
    assert "Timeout (0:00:02)!" in result.stderr, output  # faulthandler's header: 1 s + 1 s
    assert "in test_holds_the_gil" in result.stderr, output


def test_a_malformed_budget_is_a_usage_error(tmp_path):
    result, _ = run_session(tmp_path, default=60, files={
        "test_bad.py": """
            import pytest

            @pytest.mark.hang_budget("ten")
            def test_anything():
                pass
            """,
    })
    assert result.returncode == 4, result.stdout + result.stderr
    assert "hang_budget needs a positive number of seconds" in result.stdout + result.stderr
