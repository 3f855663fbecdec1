"""Tables about the benchmarks, made from the registry: the README, the docs site's pages, the metric card and the
dataset card show the same text (tests keep the committed copies in step: ``python scripts/readme_tables.py``
rewrites them)."""

from __future__ import annotations

import re

import numpy as np

from eccv_metric.benchmarks.definitions import REGISTRY
from eccv_metric.benchmarks.registry import Benchmark
from eccv_metric.benchmarks.resources import Resources

# metric, the paper's words (where), the official code, what this project does
PROTOCOL_CHOICES = (
    (
        "`cxc_r<K>` / `cxc_extended_r<K>`",
        'CxC, section 4: "We extend the existing associations with positive CxC pairs"; section 3: SITS >= 3 '
        "is positive",
        "eccv_caption: SITS >= 3 pairs alone (24,972 caption queries; 29 COCO pairs rated below 3 are not positives)",
        "`cxc_*` = the official reading (exact parity); `cxc_extended_*` = COCO pairs plus SITS >= 3 (the paper's)",
    ),
    (
        "`cxc_t2t_*` / `coco_t2t_*`",
        'CxC, section 4: "...add new caption-to-caption and image-to-image retrieval tasks using positive STS and '
        "SIS pairs\", extending MS-COCO's own text-to-text associations (appendix, Table 3); section 3: STS >= 3 "
        "is positive",
        "no public code",
        "`cxc_t2t` = co-captions (the other 4 captions of the image) plus STS >= 3, all 25,000 captions, the "
        "query left out (co-captions included and the query left out: inferred from the paper's tables, not "
        "stated in its text); `coco_t2t` = co-captions alone (the paper's MS-COCO baseline rows)",
    ),
    (
        "`cxc_i2i_*`",
        "CxC, section 4: image-to-image retrieval with positive SIS pairs; section 3: SIS >= 2.5 is positive",
        "no public code",
        "SIS >= 2.5, pairs undirected (a pair rated in both orders counts when either rating reaches 2.5); "
        "the query left out (inferred from the paper's tables, not stated in its text); `cxc_directed=True` "
        "reads the first column as the query",
    ),
    (
        "`pmrp`, `pmrp_zeta0/1/2`, `pmrp_pcme`",
        'ECCV Caption, section 4.1: "we only report PMRP when zeta = 0", R capped at 50; PCME: the average of '
        "R-Precision over zeta in {0, 1, 2}",
        "zeta = 2 (its merge.py builds the released pm_*.json with 2), own image left out, R capped at 50",
        "`pmrp` = the official code (zeta 2; exact parity); `pmrp_zeta0` = the paper's zeta 0 with the official "
        "code's exclusions, which the paper does not state (own image and captions left out, images without "
        "instance annotations taking no part); `pmrp_zeta1`, `pmrp_zeta2`; `pmrp_pcme` = PCME's average over "
        "zeta 0, 1, 2 per query (queries with a match at every zeta), with ECCV Caption's R cap and exclusions",
    ),
    (
        "`<benchmark>_medr`",
        "VSE++-style code and the CxC paper report integer MedR",
        "the official package has no MedR",
        "`numpy.median` of the 1-based ranks: x.5 when the number of queries is even and the two middle ranks "
        "differ (VSE++ prints floor(median of 0-based ranks) + 1)",
    ),
    (
        "`mscoco_fg_*`, `flickr30k_fg_*`",
        "Chen, Yao, Jin (SIGIR '23): refined captions against the enlarged pools; Fig. 7: the original pools; "
        "Table 4: the original texts on the enlarged pool",
        "no public evaluation code",
        "`<fg>` = refined captions, enlarged pool (both directions); `<fg>_original_pool` = t2i against the "
        "5,000 / 1,000 test images only; `mscoco_fg_original_texts` = the COCO captions (same ids) on the "
        "enlarged pool (Flickr30K captions are not distributed)",
    ),
    (
        "`coco_1k_*`",
        "five folds of 1,000 test images (Karpathy split)",
        "eccv_caption filters each truncated list to the fold and counts a miss when fewer than K fold items remain",
        "each query ranked within its fold; exact from scores; from lists an error unless K fold items or a "
        "positive remain",
    ),
)


def protocol_table() -> str:
    """The "protocol choices" table in Markdown."""
    lines = [
        "| metric | the paper's words | the official code | this project |",
        "|---|---|---|---|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in PROTOCOL_CHOICES]
    return "\n".join(lines)


def benchmark_table() -> str:
    """Every registered benchmark: name, directions, what it is, default metrics, citation."""
    lines = ["| benchmark | directions | definition | default metrics | source |", "|---|---|---|---|---|"]
    for bench in REGISTRY:
        default = ", ".join(f"`{name}`" for name in bench.default_metric_names())
        lines.append(
            f"| `{bench.name}` | {', '.join(bench.directions)} | {bench.description} | {default} | {bench.citation} |"
        )
    return "\n".join(lines)


def sizes(bench: Benchmark, resources: Resources) -> dict[str, tuple[int, int]] | None:
    """{direction: (queries, items a query is ranked against)} from what is at hand without a download (None: it
    needs sources)."""
    if bench.needs or "spearman" in bench.kinds:
        return None
    out = {}
    for task in bench.tasks:
        view = resources.view(bench, task)
        relations = task.relation if isinstance(task.relation, tuple) else (task.relation,)
        queries = None
        for relation in relations:
            q = set(resources.relation(bench, relation, task.direction).query.tolist())  # type: ignore[attr-defined]
            queries = q if queries is None else queries & q
        group = view.gallery_group
        gallery = len(view.gallery) if group is None else int(np.bincount(group[group >= 0]).max())
        out[task.direction] = (len(queries or ()), gallery - task.exclude_self)
    return out


def summary_table() -> str:
    """Every registered benchmark in one line: name, title, directions, default metrics (the README's table)."""
    lines = ["| benchmark | what | directions | default metrics |", "|---|---|---|---|"]
    for bench in REGISTRY:
        default = ", ".join(f"`{name}`" for name in bench.default_metric_names())
        lines.append(f"| `{bench.name}` | {bench.title} | {', '.join(bench.directions)} | {default} |")
    return "\n".join(lines)


def metric_names_table() -> str:
    """Every metric name of every benchmark (R@K shown for K = 1, 5, 10: any K is a name)."""
    lines = ["| benchmark | directions | metric names | default |", "|---|---|---|---|"]
    for bench in REGISTRY:
        names = ", ".join(f"`{name}`" for name in bench.metric_names((1, 5, 10)))
        if "recall" in bench.kinds:
            names += f"; `{bench.name}_r<K>` for any K, `{bench.name}_recalls` (R@K at every K asked)"
        default = ", ".join(f"`{name}`" for name in bench.default_metric_names())
        lines.append(f"| `{bench.name}` | {', '.join(bench.directions)} | {names} | {default} |")
    return "\n".join(lines)


def benchmark_entries(names: list[str]) -> str:
    """One section per named benchmark: its definition, source, the paper's words and the official code's."""
    out = []
    for name in names:
        bench = REGISTRY.get(name)
        fields = [
            ("directions", ", ".join(bench.directions)),
            ("definition", bench.description),
            ("default metrics", ", ".join(f"`{n}`" for n in bench.default_metric_names())),
            ("every metric", ", ".join(f"`{n}`" for n in bench.metric_names((1, 5, 10)))),
            ("source", bench.citation),
            ("the paper's words", bench.paper),
            ("the official code", bench.official),
            ("needs", bench.needs),
            ("dataset configs", ", ".join(f"`{c}`" for c in bench.configs)),
            ("license", bench.license),
        ]
        out += [f"### `{bench.name}`: {bench.title}", ""]
        out += [f"- **{label}**: {value}" for label, value in fields if value]
        out.append("")
    return "\n".join(out).rstrip()


MARKERS = {
    "benchmark-table": benchmark_table,
    "protocol-table": protocol_table,
    "benchmark-summary": summary_table,
    "metric-names": metric_names_table,
}
ENTRIES = re.compile(r"(<!-- benchmarks: ([a-z0-9_ ]+) -->)\n.*?(<!-- /benchmarks -->)", re.S)


def fill_tables(text: str) -> str:
    """``text`` with every ``<!-- name -->...<!-- /name -->`` block of :data:`MARKERS` regenerated, and every
    ``<!-- benchmarks: a b -->...<!-- /benchmarks -->`` block with those benchmarks' entries."""
    for name, make in MARKERS.items():
        start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
        if start in text and end in text:
            head, rest = text.split(start, 1)
            _, tail = rest.split(end, 1)
            text = f"{head}{start}\n{make()}\n{end}{tail}"
    return ENTRIES.sub(lambda m: f"{m[1]}\n{benchmark_entries(m[2].split())}\n{m[3]}", text)


def entry_names(text: str) -> list[str]:
    """The benchmarks named by the ``<!-- benchmarks: ... -->`` markers of ``text``."""
    return [name for match in ENTRIES.finditer(text) for name in match[2].split()]
