"""The registry is consistent, its names parse back, every metric is formatted by its kind, the docs are in step."""

from __future__ import annotations

from pathlib import Path

import pytest

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric import REGISTRY
from eccv_metric import EvaluationError
from eccv_metric.analysis.report import format_table
from eccv_metric.analysis.report import shown
from eccv_metric.benchmarks.docs import entry_names
from eccv_metric.benchmarks.docs import fill_tables
from eccv_metric.benchmarks.docs import protocol_table
from eccv_metric.benchmarks.names import metric_info
from eccv_metric.benchmarks.names import parse_targets
from eccv_metric.measures.kinds import METRIC_KINDS

ROOT = Path(__file__).resolve().parents[2]
ALL_NAMES = [(bench, name) for bench in REGISTRY for name in bench.metric_names((1, 5, 10))]


def test_every_benchmark_is_complete():
    names = [name for _, name in ALL_NAMES]
    assert len(names) == len(set(names)), "two benchmarks give the same metric name"
    for bench in REGISTRY:
        assert bench.title and bench.description and bench.citation and bench.collection, bench.name
        assert bench.tasks and len(set(bench.directions)) == len(bench.directions), bench.name
        assert all(k in METRIC_KINDS for k in bench.kinds), bench.name
        defaults = parse_targets(None, (1, 5, 10), benchmarks=[bench.name])
        assert defaults and all(r.benchmark is bench for r in defaults), bench.name


@pytest.mark.parametrize("bench,name", ALL_NAMES, ids=[n for _, n in ALL_NAMES])
def test_every_metric_name_parses_back_and_is_formatted_by_its_kind(bench, name):
    owner, kind = metric_info(name)
    assert owner is bench
    requests = parse_targets([name], (1, 5, 10))
    assert [r.name for r in requests] == [name.removesuffix("_std")]
    text = shown(name, 0.123456)
    assert text == {"fraction": "12.35", "rank": "0.12", "correlation": "0.123"}[kind.scale]


def test_table_names_the_unit_of_each_row():
    table = format_table(
        {"eccv_map_at_r": {"i2t": 0.5}, "coco_5k_medr": {"t2i": 3.5}, "cxc_sts_spearman": {"t2t": 0.5}}
    )
    header, _, *lines = table.splitlines()
    columns = header.split()
    rows = {line.split()[0]: dict(zip(columns, line.split(), strict=True)) for line in lines}
    assert rows["eccv_map_at_r"]["i2t"] == "50.00" and rows["eccv_map_at_r"]["unit"] == "percent"
    assert rows["coco_5k_medr"]["t2i"] == "3.50" and rows["coco_5k_medr"]["unit"] == "rank"
    assert rows["cxc_sts_spearman"]["t2t"] == "0.500" and rows["cxc_sts_spearman"]["unit"] == "rho"


@pytest.mark.parametrize(
    "names,message",
    [
        (["eccv_r0"], "unknown target metric 'eccv_r0'"),
        (["pmrp_recalls"], "unknown target metric"),
        (["cxc_sts_r1"], "unknown target metric"),
        ([], "target_metrics is empty"),
        ([5], "names must be strings"),
    ],
)
def test_bad_names_are_refused(names, message):
    with pytest.raises(EvaluationError, match=message):
        parse_targets(names)


def test_huge_k_is_a_name_like_any_other():
    (request,) = parse_targets(["coco_5k_r" + "9" * 30])
    assert request.k == int("9" * 30)


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), EVALUATE_MODULE_DIR / "README.md"]


@pytest.mark.parametrize("path", DOCS, ids=lambda path: str(path.relative_to(ROOT)))
def test_docs_show_the_registry_as_it_is(path):
    text = path.read_text()
    assert fill_tables(text) == text, f"{path}: run python scripts/readme_tables.py"


def test_every_benchmark_has_one_page_of_its_family():
    """Each registry entry is shown on exactly one family page (``<!-- benchmarks: ... -->``), so a new
    benchmark needs a place in the docs."""
    named = [name for path in DOCS for name in entry_names(path.read_text())]
    assert sorted(named) == sorted(bench.name for bench in REGISTRY)


def test_texts_say_where_each_protocol_part_comes_from():
    """Issue 35: CxC's thresholds are stated in its section 3; the PM exclusions are the official code's; the
    intramodal co-captions / self-exclusion are inferred from the CxC paper's tables, not stated."""
    for name in ("cxc", "cxc_extended", "cxc_t2t", "cxc_i2i"):
        assert "section 3 (" in REGISTRY.get(name).citation, name
    for name in ("pm", "pm_zeta0", "pm_zeta1", "pm_zeta2"):
        assert "official code's choices, not stated in the papers" in REGISTRY.get(name).description, name
    pcme = REGISTRY.get("pm_pcme")
    assert "Averaging over zeta is PCME's proposal" in pcme.description and "not PCME's" in pcme.description
    for name in ("cxc_t2t", "cxc_i2i"):
        assert "inferred from the paper's tables, not stated in its text" in REGISTRY.get(name).description, name
    table = protocol_table()
    assert "section 3: SIS >= 2.5 is positive" in table and "section 4: image pairs with SIS" not in table
