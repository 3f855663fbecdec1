"""The CPU report's slow list (tests/cpu_report.py): what the developer's loop leaves out is measured, and every
test file keeps a test in the loop."""

from pathlib import Path

from tests.cpu_report import SLOW_CPU
from tests.cpu_report import SLOW_LIST
from tests.cpu_report import slow_list
from tests.cpu_report import slow_tests


def test_tests_over_the_threshold_are_listed_but_each_files_cheapest_stays():
    costs = {
        "tests/a.py::cheap": 0.1,
        "tests/a.py::dear": SLOW_CPU + 5,
        "tests/a.py::edge": SLOW_CPU,  # at the threshold: not over it
        "tests/b.py::only": SLOW_CPU + 40,  # a file's one test stays in the loop, whatever it costs
        "tests/c.py::one": SLOW_CPU + 3,
        "tests/c.py::two": SLOW_CPU + 1,
    }
    assert slow_tests(costs, set()) == ["tests/a.py::dear", "tests/c.py::one"]


def test_a_test_marked_slow_by_hand_is_never_the_one_a_file_keeps():
    costs = {"tests/m.py::reads_the_process": 0.2, "tests/m.py::pays_for_it": 45.0, "tests/m.py::apart": 6.0}
    by_hand = {"tests/m.py::reads_the_process", "tests/m.py::pays_for_it"}
    # by hand needs no listing; the file keeps the cheapest of the rest, however dear
    assert slow_tests(costs, by_hand) == []
    costs["tests/m.py::also_apart"] = 7.0
    assert slow_tests(costs, by_hand) == ["tests/m.py::also_apart"]


def test_the_committed_list_names_tests_that_exist():
    listed = slow_list()
    assert listed, f"{SLOW_LIST} is empty: run `python -m pytest -n 2 --dist loadfile --write-slow`"
    root = Path(__file__).parents[2]
    for nodeid in listed:
        path, _, name = nodeid.partition("::")
        source = (root / path).read_text()
        assert f"def {name.split('[')[0]}(" in source, f"{nodeid} in {SLOW_LIST.name} is not a test any more"
