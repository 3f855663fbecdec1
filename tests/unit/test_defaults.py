"""Defaults written once (core.defaults): every front end's signature, flag, box and help text reads them."""

from __future__ import annotations

import ast
import inspect

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import Metrics
from eccv_metric import PMOptions
from eccv_metric import ResourceOptions
from eccv_metric import evaluate
from eccv_metric import evaluate_many
from eccv_metric.benchmarks.request import Request
from eccv_metric.cli.main import build_parser
from eccv_metric.core.defaults import KS
from eccv_metric.core.defaults import KS_TEXT
from eccv_metric.core.defaults import N_RESAMPLES
from eccv_metric.core.defaults import PM_INCLUDE_OWN
from eccv_metric.core.defaults import PM_R_CAP
from eccv_metric.core.defaults import PM_ZETA
from eccv_metric.core.defaults import SEED
from eccv_metric.hub import space

WANT = {"ks": KS, "Ks": KS, "n_resamples": N_RESAMPLES, "seed": SEED, "pm_zeta": PM_ZETA}
WANT |= {"pm_include_own": PM_INCLUDE_OWN, "pm_r_cap": PM_R_CAP}


def defaults_of(function) -> dict:
    params = inspect.signature(function).parameters
    return {name: p.default for name, p in params.items() if name in WANT}


def test_python_signatures_read_the_defaults():
    functions = [evaluate, evaluate_many, Request.parse, Metrics.__init__, Metrics.per_query]
    functions += [Metrics.per_query_from_scores, Metrics.per_query_from_embeddings, Metrics.cxc_correlation]
    for function in functions:
        got = defaults_of(function)
        assert got and got == {name: WANT[name] for name in got}, function.__qualname__
    assert PMOptions() == PMOptions(PM_ZETA, PM_INCLUDE_OWN, PM_R_CAP) == ResourceOptions().pm


def test_the_cli_flags_and_their_help_read_the_defaults():
    parser = build_parser()
    evaluate_parser = parser._subparsers._group_actions[0].choices["evaluate"]  # type: ignore[union-attr]
    actions = {a.dest: a for a in evaluate_parser._actions}
    assert actions["ks"].default == list(KS) and KS_TEXT in actions["ks"].help
    assert actions["n_resamples"].default == N_RESAMPLES and str(N_RESAMPLES) in actions["n_resamples"].help
    assert actions["seed"].default == SEED
    assert actions["pm_zeta"].default == PM_ZETA and str(PM_ZETA) in actions["pm_zeta"].help
    assert actions["pm_r_cap"].default == PM_R_CAP and str(PM_R_CAP) in actions["pm_r_cap"].help


def test_the_space_and_the_module_read_the_defaults():
    assert space.parse_ks("") == list(KS) and space.example_state()["ks"] == KS_TEXT
    assert inspect.signature(space.score).parameters["ks_text"].default == KS_TEXT
    tree = ast.parse((EVALUATE_MODULE_DIR / "eccv_map_at_r.py").read_text())  # not imported: evaluate is slow
    compute = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "_compute")
    args = [a.arg for a in compute.args.args][-len(compute.args.defaults) :]
    named = dict(zip(args, compute.args.defaults, strict=True))
    constants = {"Ks": "KS", "n_resamples": "N_RESAMPLES", "seed": "SEED", "pm_zeta": "PM_ZETA"}
    constants |= {"pm_include_own": "PM_INCLUDE_OWN", "pm_r_cap": "PM_R_CAP"}
    assert {k: getattr(named[k], "id", None) for k in constants} == constants
    docs = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "_KWARGS_ARGS")  # type: ignore[attr-defined]
    assert {v.value.id for v in ast.walk(docs.value) if isinstance(v, ast.FormattedValue)} == set(constants.values())
