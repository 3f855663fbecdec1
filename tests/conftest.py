"""Both layers: the suite's CPU report per test file (tests/cpu_report.py)."""

pytest_plugins = ["tests.cpu_report"]
