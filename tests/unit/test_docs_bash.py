"""Every line of the README's ```bash blocks pastes: valid bash, no ``[--option]`` brackets or ``<placeholder>``
redirections, and every ``eccv-caption`` command parses with the CLI's own argparse. Which lines the integration
layer also runs (and why the others are only parsed): tests/docs_blocks.py."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess

import pytest

from eccv_metric.cli.main import build_parser
from tests.docs_blocks import ALSO_RUN
from tests.docs_blocks import PARSE_ONLY
from tests.docs_blocks import bash_lines
from tests.docs_blocks import cli_calls
from tests.docs_blocks import command

LINES = bash_lines()


def test_the_readme_has_its_shell_lines_and_every_parse_only_line_is_there():
    assert len(LINES) >= 25 and sum(bool(cli_calls(line)) for line in LINES) >= 20
    commands = {command(line) for line in LINES}
    assert set(PARSE_ONLY) <= commands, set(PARSE_ONLY) - commands  # a stale entry: the README changed
    assert ALSO_RUN <= set(PARSE_ONLY)


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
