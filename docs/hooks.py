"""MkDocs hooks (mkdocs.yml ``hooks:``): the command-line reference is made from the CLI's own argparse parser at
build time, so `eccv-caption --help` and the site cannot disagree.

A page holding the line ``<!-- cli-reference -->`` gets, in its place, one section per subcommand: what it does,
its usage line, and a table of every flag (its names, argument, default and help text, as ``--help`` prints them).
"""

from __future__ import annotations

import argparse
import html
import re

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown: str, page: object, config: object, files: object) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, cli_reference())
    return markdown


def cli_reference() -> str:
    """Markdown for ``eccv-caption`` and every subcommand, from :func:`eccv_metric.cli.main.build_parser`."""
    from eccv_metric.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    lines = [
        "| command | what it does |",
        "|---|---|",
        *(f"| [`{name}`](#{anchor(name)}) | {cell(helps.get(name, ''))} |" for name in sub.choices),
        "",
    ]
    for name, command in sub.choices.items():
        lines += [f"## `eccv-caption {name}` {{#{anchor(name)}}}", "", cell(helps.get(name, "")) + ".", ""]
        if command.description:
            lines += [command.description, ""]
        command.formatter_class = wide  # the terminal's width would decide the wrapping otherwise
        usage = command.format_usage().strip().removeprefix("usage: ")
        lines += ["```text", usage, "```", ""]
        lines += flag_table(command)
    return "\n".join(lines)


def wide(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=88)


def anchor(name: str) -> str:
    return f"cmd-{name}"


def flag_table(command: argparse.ArgumentParser) -> list[str]:
    lines = ["| flag | default | what it does |", "|---|---|---|"]
    for action in command._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        value = argument(action)
        if action.option_strings:
            names = ", ".join(f"`{' '.join(filter(None, (flag, value)))}`" for flag in action.option_strings)
        else:
            names = f"`{value}` (positional)"
        lines.append(f"| {cell(names)} | {cell(default(action))} | {cell(expand(action))} |")
    return [*lines, ""]


def argument(action: argparse.Action) -> str:
    """What follows the flag, as the usage line writes it (``""`` for a switch)."""
    if action.nargs == 0:
        return ""
    metavar = action.metavar or (action.dest.upper() if action.option_strings else action.dest)
    if action.choices is not None and not action.metavar:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    many = {"+": f"{metavar} [...]", "*": f"[{metavar} ...]", "?": f"[{metavar}]"}
    return many.get(action.nargs, metavar) if isinstance(action.nargs, str) else metavar


def default(action: argparse.Action) -> str:
    if action.nargs == 0 or action.default in (None, argparse.SUPPRESS) or action.required:
        return ""
    value = " ".join(map(str, action.default)) if isinstance(action.default, list | tuple) else action.default
    return f"`{value}`"


def expand(action: argparse.Action) -> str:
    """The help text as ``--help`` prints it (``%(default)s`` and the like filled in)."""
    text = action.help or ""
    if "%" in text:
        params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = text % params
    return text


def cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: pipes escaped, angle brackets as entities (placeholders like
    ``<repo>`` would otherwise be read as HTML tags), line breaks as spaces."""
    text = re.sub(r"\s+", " ", text).strip()
    parts = re.split(r"(`[^`]*`)", text)  # code spans keep their text (Markdown escapes it there)
    out = [
        p.replace("|", "\\|") if p.startswith("`") else html.escape(p, quote=False).replace("|", "\\|") for p in parts
    ]
    return "".join(out)
