"""The ground-truth flags, derived from :class:`~eccv_metric.benchmarks.resource_options.ResourceOptions`: one flag
a field (``--cxc-source`` for ``cxc_source``, its help from ``HELP``), plus ``--source-dir`` (both sources);
:func:`options_of` reads them back into one :class:`ResourceOptions`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import fields

from eccv_metric.benchmarks.resource_options import HELP
from eccv_metric.benchmarks.resource_options import ResourceOptions

NAMES = tuple(f.name for f in fields(ResourceOptions))
SOURCE_DIR_HELP = "a folder searched for both the CxC CSVs and the FG files"
SOURCE_DIR_FILLS = ("cxc_source", "fg_source")  # the fields --source-dir gives when their own flags are not given


def pm_r_cap(text: str) -> int | None:
    """``--pm-r-cap``: a positive integer, or ``none`` for the uncapped R-Precision (0 is refused, as in the API)."""
    if text.strip().lower() == "none":
        return None
    if not text.strip().isascii() or not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or 'none', not {text!r}")
    return int(text)


TYPES: dict[str, Callable[[str], object]] = {"pm_zeta": int, "pm_r_cap": pm_r_cap}  # other fields: paths, switches


def flag(name: str) -> str:
    """The flag of a field: ``cxc_source`` -> ``--cxc-source``."""
    return "--" + name.replace("_", "-")


def resource_words() -> dict[str, str]:
    """Each field's keyword in the CLI's words (core.errors.in_words; cli.common.CLI_WORDS holds them): its
    flag, and ``or --source-dir`` for the sources that flag also gives."""
    return {name: flag(name) + (" or --source-dir" if name in SOURCE_DIR_FILLS else "") for name in NAMES}


def add_resource_flags(
    parser: argparse._ActionsContainer, names: Iterable[str] = NAMES, source_dir: bool = True
) -> None:
    """One flag per :class:`ResourceOptions` field named (default: all), and ``--source-dir``."""
    defaults = ResourceOptions()
    for name in names:
        default = getattr(defaults, name)
        if isinstance(default, bool):
            parser.add_argument(flag(name), action="store_true", help=HELP[name])
        else:
            parser.add_argument(flag(name), type=TYPES.get(name), default=default, help=HELP[name])
    if source_dir:
        parser.add_argument("--source-dir", help=SOURCE_DIR_HELP)


def options_of(args: argparse.Namespace) -> ResourceOptions:
    """The flags a command was given as :class:`ResourceOptions` (flags it does not have: their defaults);
    ``--source-dir`` fills the CxC and FG sources not given by their own flags."""
    given = {name: getattr(args, name) for name in NAMES if hasattr(args, name)}
    source_dir = getattr(args, "source_dir", None)
    return ResourceOptions(**given).filled(**dict.fromkeys(SOURCE_DIR_FILLS, source_dir))
