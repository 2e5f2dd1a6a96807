"""The test tiers (tests/tiers.py): which tests are marked slow, and the watch that fails a slow test
left in the fast tier.

The sample functions are compiled from text, as if written in a file under tests/, so that this
module names no child process or server itself and stays in the fast tier.
"""

from __future__ import annotations

import sys
import textwrap

import tiers

pytest_plugins = ["pytester"]

SAMPLES = '''
import socketserver
import subprocess

def child():
    return subprocess.run(["true"])

def calls_a_child_through_a_helper():
    return child()

def serves():
    return socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler)

def adds(a, b):
    return sorted([a, b])

def comprehension():
    return [child() for _ in range(2)]

def bundled():
    from curator.core.resources import bundled_model_path

    return bundled_model_path()
'''


def samples() -> dict:
    namespace: dict = {}
    exec(compile(SAMPLES, str(tiers.TESTS_DIR / "tiers_samples.py"), "exec"), namespace)
    return namespace


def test_a_child_process_a_server_or_the_bundled_model_is_slow_and_plain_code_is_not():
    s, code = samples(), tiers.SlowCode()
    assert code.why(s["child"]) == "starts a child process (via subprocess)"
    assert code.why(s["calls_a_child_through_a_helper"]) == "starts a child process (via child > subprocess)"
    assert code.why(s["serves"]) == "starts a server (via socketserver > TCPServer)"
    assert code.why(s["comprehension"]) is not None  # nested code objects are read too
    assert code.why(s["adds"]) is None


def test_a_name_imported_inside_a_function_is_not_followed_but_the_watch_sees_its_work():
    # The rules read the names a function's globals resolve; a lazy import inside the body is a
    # local. Such a test is caught while it runs, which is why the watch exists.
    assert tiers.SlowCode().why(samples()["bundled"]) is None


def test_the_watch_records_what_a_test_starts():
    saved, watching = list(tiers._STARTED), tiers._WATCHING[0]
    tiers._STARTED.clear()
    tiers._WATCHING[0] = True
    try:
        samples()["serves"]().server_close()
        assert tiers._STARTED == ["starts a server (TCPServer)"]
    finally:
        tiers._STARTED[:] = saved  # this test itself started nothing the run should hear of
        tiers._WATCHING[0] = watching


def _run_tiers(pytester, *args):
    """pytest in-process on the files pytester made, with the tiers hooks; this run's own state is kept."""
    pytester.makeconftest("from tiers import *  # noqa: F401,F403\n")
    saved = (list(tiers._STARTED), tiers._WATCHING[0], dict(tiers._UNMARKED), dict(tiers._HEAVY))
    try:
        return pytester.runpytest_inprocess("-p", "no:cacheprovider", *args)
    finally:
        tiers._STARTED[:], tiers._WATCHING[0] = saved[0], saved[1]
        for found, before in ((tiers._UNMARKED, saved[2]), (tiers._HEAVY, saved[3])):
            found.clear()
            found.update(before)


def test_a_child_python_is_slow_and_a_system_tool_asked_a_question_is_not():
    assert tiers._child_process(None, [sys.executable, "-c", "pass"]).startswith("starts a child process")
    assert tiers._child_process(None, ["/opt/curator/curator", "doctor"]) is not None
    assert tiers._child_process(None, ["lscpu", "--parse=core"]) is None
    assert tiers._child_process(None, "ldd /usr/lib/libqxcb.so") is None


def test_the_fast_tier_leaves_marked_tests_out_and_fails_a_slow_test_no_rule_saw(pytester):
    # serve() lives outside tests/, so no rule follows it into socketserver: only the watch can tell
    pytester.makepyfile(helper=textwrap.dedent("""
        import socketserver

        def serve():
            socketserver.TCPServer(("127.0.0.1", 0), socketserver.BaseRequestHandler).server_close()
    """))
    pytester.makepyfile(test_tier_probe=textwrap.dedent("""
        import subprocess
        import helper

        def test_plain():
            assert 1 + 1 == 2

        def test_spawns():
            subprocess.run(["true"])

        def test_serves_unseen():
            helper.serve()
    """))
    fast = _run_tiers(pytester, "-m", "not slow")
    fast.assert_outcomes(passed=1, failed=1, deselected=1)
    fast.stdout.fnmatch_lines(["*tiers: 1 slow and 2 fast tests collected*", "*_ test_serves_unseen _*",
                               "this test is not marked slow but it starts a server (TCPServer)*"])
    note = tiers.CPU_NOTE_SECONDS
    tiers.CPU_NOTE_SECONDS = 0.0  # every test over it, so the CPU listing shows; restored before this test ends
    try:
        everything = _run_tiers(pytester)
    finally:
        tiers.CPU_NOTE_SECONDS = note
    everything.assert_outcomes(passed=3)  # the whole run lists it and fails nothing
    everything.stdout.fnmatch_lines(["*tests that are slow but not marked slow*",
                                     "*test_serves_unseen: starts a server (TCPServer)*",
                                     "*fast-tier tests over 0 s of CPU (candidates for SLOW_TESTS)*",
                                     "* s CPU  test_tier_probe.py::test_plain"])


def test_every_test_listed_in_slow_tests_still_exists():
    """A renamed test would leave a stale entry, and the test itself would fall back into the fast tier."""
    stale = []
    for nodeid in tiers.SLOW_TESTS:
        path, _, rest = nodeid.partition("::")
        function = rest.split("[")[0].split("::")[-1]
        source = tiers.TESTS_DIR.parent / path
        if not source.exists() or (function and f"def {function}(" not in source.read_text(encoding="utf-8")):
            stale.append(nodeid)
    assert not stale, f"SLOW_TESTS names tests that no longer exist: {stale}"
