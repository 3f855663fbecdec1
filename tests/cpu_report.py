"""The suite's CPU cost per test file: a pytest plugin of the project's own (loaded by ``tests/conftest.py``).

Each test's CPU is measured in the process that runs it, across its setup, call and teardown: user + system
seconds of the process itself and of its children that ended in that time (``getrusage``: RUSAGE_SELF and
RUSAGE_CHILDREN), so a subprocess, a fresh interpreter or a browser the test waits for counts to its test. A
session fixture's cost lands on the first test that asks for it. Under pytest-xdist each worker sends its
numbers to the controller with the test's report (``user_properties``), and at its end its whole CPU
(collection included) in ``workeroutput``.

The developer's loop, ``python -m pytest -n 2 -m "not slow"``: besides the tests marked ``@pytest.mark.slow`` by
hand, every test listed in ``tests/slow_tests.txt`` is marked slow at collection. That list is measured, not
guessed: ``--write-slow`` rewrites it from this run's figures (every test over :data:`SLOW_CPU` CPU-seconds, but
each test file keeps its cheapest test, so the loop still runs every file). A session fixture's cost lands on the
first test that asks for it: once those are listed, the next user pays it in the loop, so a run of the loop with
``--write-slow`` adds what became slow to the list (a whole run rewrites it).

At the end of the run the plugin prints the 15 test files that cost the most, the whole run's CPU-seconds (the
controller, each worker and their children: what ``/usr/bin/time`` would count), the tests over
:data:`HEAVY_CPU` seconds with the reason each gives (``@pytest.mark.heavy("why it must be")``; one without a
reason is named so), and writes every file's and every test's figures to ``--cpu-report`` (JSON; default
``.pytest_cache/cpu-report.json``). The budget (docs/contributing/tests.md) is on the whole run's figure; no test
asserts a time.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import pytest

HEAVY_CPU = 60.0  # CPU-seconds above which a test must say why it must cost that (docs/contributing/tests.md)
SLOW_CPU = 1.0  # CPU-seconds above which --write-slow lists a test in SLOW_LIST
SLOW_LIST = Path(__file__).with_name("slow_tests.txt")
SHOWN = 15  # files printed at the end of a run
KEY = "cpu_seconds"


def cpu_now() -> float:
    """CPU-seconds (user + system) of this process and of its children that ended, so far."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report",
        default=".pytest_cache/cpu-report.json",
        help="where the CPU-seconds per test file and per test are written (JSON); '' writes none",
    )
    parser.addoption(
        "--write-slow",
        action="store_true",
        help=f"rewrite {SLOW_LIST.name} from this run: tests over {SLOW_CPU:g} CPU-s, each file's cheapest kept",
    )


@functools.cache
def slow_list() -> frozenset[str]:
    """The test ids tests/slow_tests.txt marks slow (one per line; '#' starts a comment)."""
    if not SLOW_LIST.is_file():
        return frozenset()
    lines = (line.split("#", 1)[0].strip() for line in SLOW_LIST.read_text().splitlines())
    return frozenset(line for line in lines if line)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    listed = slow_list()
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.slow)


def slow_tests(per_test: dict[str, float], marked: set[str]) -> list[str]:
    """The tests over SLOW_CPU CPU-seconds, less each file's cheapest test not already marked slow by hand (the
    loop runs every file)."""
    by_file: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for nodeid, cpu in per_test.items():
        by_file[nodeid.split("::")[0]].append((cpu, nodeid))
    out = []
    for tests in by_file.values():
        free = sorted(t for t in tests if t[1] not in marked)
        keep = free[0][1] if free else None
        out += [nodeid for cpu, nodeid in tests if cpu > SLOW_CPU and nodeid != keep and nodeid not in marked]
    return sorted(out)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"heavy(reason): a test that must cost over {HEAVY_CPU:.0f} CPU-seconds, and why (cpu_report.py)"
    )
    report = CpuReport(config)
    config.pluginmanager.register(report, "cpu_report")
    if hasattr(config.pluginmanager.hook, "pytest_testnodedown"):  # pytest-xdist is active: hear its workers
        config.pluginmanager.register(WorkerTotals(report), "cpu_report_workers")


class CpuReport:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.start_wall = time.monotonic()
        self.per_test: dict[str, float] = defaultdict(float)
        self.reasons: dict[str, str] = {}
        self.workers: dict[str, float] = {}
        self.by_hand: set[str] = set()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        start = cpu_now()
        item.user_properties.append((KEY, start))  # replaced in each phase's report below
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        report = outcome.get_result()
        props = [p for p in item.user_properties if p[0] != KEY]
        start = next(value for name, value in item.user_properties if name == KEY)
        now = cpu_now()
        marker = item.get_closest_marker("heavy")
        by_hand = item.get_closest_marker("slow") is not None and item.nodeid not in slow_list()
        why = "" if marker is None else str(marker.args[0] if marker.args else marker.kwargs.get("reason", ""))
        # each phase reports the CPU spent since the previous phase ended; the item keeps the running mark
        item.user_properties[:] = [*props, (KEY, now)]
        report.user_properties = [*props, (KEY, now - start), ("heavy_reason", why), ("slow_by_hand", by_hand)]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if KEY in props:
            self.per_test[report.nodeid] += float(props[KEY])
            if props.get("heavy_reason"):
                self.reasons[report.nodeid] = str(props["heavy_reason"])
            if props.get("slow_by_hand"):
                self.by_hand.add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        out = getattr(self.config, "workeroutput", None)
        if out is not None:  # an xdist worker: its whole CPU, collection and session teardown included
            out["cpu_seconds_total"] = cpu_now()

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.per_test:
            return
        files: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        for nodeid, cpu in self.per_test.items():
            files[nodeid.split("::")[0]] += cpu
            counts[nodeid.split("::")[0]] += 1
        me = resource.getrusage(resource.RUSAGE_SELF)
        controller = me.ru_utime + me.ru_stime if self.workers else cpu_now()  # workers: their own totals
        total = controller + sum(self.workers.values())
        wall = time.monotonic() - self.start_wall
        write = terminalreporter.write_line
        terminalreporter.section("CPU-seconds per test file (cpu_report.py)")
        for path, cpu in sorted(files.items(), key=lambda kv: -kv[1])[:SHOWN]:
            write(f"{cpu:9.1f}  {counts[path]:5d} tests  {path}")
        in_tests = sum(files.values())
        write(
            f"whole run: {total:.0f} CPU-seconds ({in_tests:.0f} in tests, the rest collection, imports and the "
            f"controller) in {wall:.0f} s wall, {len(self.per_test)} tests, {len(self.workers) or 1} process(es)"
        )
        heavy = sorted((cpu, nodeid) for nodeid, cpu in self.per_test.items() if cpu > HEAVY_CPU)
        for cpu, nodeid in reversed(heavy):
            why = self.reasons.get(nodeid)
            write(f"over {HEAVY_CPU:.0f} CPU-s: {cpu:6.1f}  {nodeid}: {why or 'NO REASON GIVEN (@pytest.mark.heavy)'}")
        target = self.config.getoption("--cpu-report")
        if target:
            path = Path(self.config.rootpath, target)
            path.parent.mkdir(parents=True, exist_ok=True)
            doc = {
                "total_cpu_seconds": round(total, 1),
                "wall_seconds": round(wall, 1),
                "workers": self.workers,
                "files": {k: round(v, 2) for k, v in sorted(files.items(), key=lambda kv: -kv[1])},
                "tests": {k: round(v, 2) for k, v in sorted(self.per_test.items(), key=lambda kv: -kv[1])},
                "reasons": self.reasons,
            }
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, path)
            write(f"every file and test: {path}")
        if self.config.getoption("--write-slow"):
            listed = slow_tests(self.per_test, self.by_hand)
            if self.config.getoption("markexpr"):  # a loop's run: its newly slow tests join the list (the
                listed = sorted(slow_list() | set(listed))  # costs of fixtures its deselected tests paid move)
            header = (
                f"# tests marked slow at collection (tests/cpu_report.py): over {SLOW_CPU:g} CPU-s in a whole run,\n"
                "# each file's cheapest test kept; rewritten by `python -m pytest -n 2 --dist loadfile --write-slow`\n"
            )
            SLOW_LIST.write_text(header + "".join(f"{nodeid}\n" for nodeid in listed))
            write(f"{len(listed)} tests listed as slow in {SLOW_LIST}")


class WorkerTotals:
    """The xdist controller's side: each worker's whole CPU when it ends (a hook only xdist defines)."""

    def __init__(self, report: CpuReport) -> None:
        self.report = report

    def pytest_testnodedown(self, node, error) -> None:
        total = getattr(node, "workeroutput", {}).get("cpu_seconds_total")
        if total is not None:
            self.report.workers[str(node.gateway.id)] = float(total)
