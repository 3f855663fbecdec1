"""The README's two commands: the first installs what a user needs and runs the main job; CI runs exactly both."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    blocks = re.findall(r"^```bash\n(.*?)^```", (ROOT / "README.md").read_text(), re.S | re.M)
    return [block.strip() for block in blocks[:2]]


def test_the_first_command_installs_the_package_alone_and_runs_the_demo():
    first, second = _commands()
    assert first == "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && eccv-caption evaluate --demo"
    assert "chromium" in second and '".[dev,space,docs]"' in second
    # CI's torch (the CPU build on its disk) comes before the project: the extras only ask for a range
    assert second.index("pip install torch==2.13.0 && ") < second.index('pip install -e ".[dev,space,docs]"')
    assert second.endswith("python -m pytest -n 2 --dist loadfile")


def test_ci_runs_exactly_the_two_readme_commands_and_keeps_its_checks():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    for command in _commands():
        assert command in lines, command
    assert lines.index(_commands()[0]) < lines.index(_commands()[1])
    text = "\n".join(lines)
    for kept in (
        "set -euo pipefail",
        "test -d ../shared/data",
        "rm -rf .venv",
        "ruff check .",
        "ruff format --check .",
    ):
        assert kept in text, kept


def test_no_extra_a_user_installs_pins_a_release():
    """The extras a user installs to run the package ask for ranges (a user's own torch is kept); only the
    tooling extras of this project's tests, docs and Space may pin what they are tested with."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    tooling = {"dev", "docs", "space"}
    assert {"models", "open_clip", "mteb", "plot"} <= set(extras)
    for name, requirements in extras.items():
        pinned = [r for r in requirements if "==" in r or "===" in r]
        if name not in tooling:
            assert not pinned, f"extra {name!r} pins {pinned}"
    for name in ("models", "open_clip", "dev"):
        assert "torch>=2.6" in extras[name], name
