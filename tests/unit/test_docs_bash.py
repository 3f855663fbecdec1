"""Every line of the ```bash blocks of the README and the docs site's pages pastes: valid bash, no ``[--option]``
brackets or ``<placeholder>`` redirections, and every ``eccv-caption`` command parses with the CLI's own argparse;
every ```python block compiles. Which lines and blocks the integration layer also runs (and why the others are
only parsed): tests/docs_blocks.py."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess

import pytest

from eccv_metric.cli.main import build_parser
from tests.docs_blocks import ALSO_RUN
from tests.docs_blocks import PARSE_ONLY
from tests.docs_blocks import PY_NOT_RUN
from tests.docs_blocks import bash_lines
from tests.docs_blocks import cli_calls
from tests.docs_blocks import command
from tests.docs_blocks import page_name
from tests.docs_blocks import pages
from tests.docs_blocks import python_blocks

LINES = bash_lines()
PYTHON = [(page_name(path), i, code) for path in pages() for i, code in enumerate(python_blocks(path.read_text()))]


def test_the_docs_have_their_shell_lines_and_every_listed_line_is_there():
    assert len(LINES) >= 25 and sum(bool(cli_calls(line)) for line in LINES) >= 20
    commands = {command(line) for line in LINES}
    assert set(PARSE_ONLY) <= commands, set(PARSE_ONLY) - commands  # a stale entry: a page changed
    assert ALSO_RUN <= set(PARSE_ONLY)
    codes = [code for _, _, code in PYTHON]
    for key in PY_NOT_RUN:
        assert any(key in code for code in codes), f"no ```python block holds {key!r}: a stale entry"


@pytest.mark.parametrize("line", LINES)
def test_each_line_is_valid_bash_as_pasted(line):
    written = command(line)
    assert not re.search(r"\[\s*-", written), f"an optional flag in brackets fails when pasted: {line}"
    assert "<" not in written and ">" not in written, f"a <placeholder> is a redirection in bash: {line}"
    done = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{line}\n{done.stderr}"


@pytest.mark.parametrize("line", [line for line in LINES if cli_calls(line)])
def test_each_eccv_caption_command_parses_with_the_cli(line):
    for argv in cli_calls(line):
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
                args = build_parser().parse_args(argv)
        except SystemExit as exc:
            pytest.fail(f"argparse refuses `eccv-caption {' '.join(argv)}` (exit {exc.code}): {said.getvalue()}")
        assert callable(args.func)


@pytest.mark.parametrize("where,index,code", PYTHON, ids=[f"{page}-{i}" for page, i, _ in PYTHON])
def test_each_python_block_compiles(where, index, code):
    if any(line.lstrip().startswith(">>>") for line in code.splitlines()):
        return  # a doctest: its lines run in tests/integration/test_docs_recipes.py
    compile(code, f"{where} block {index + 1}", "exec")
