"""The documentation site: it builds strictly (every internal link and anchor checked), its references are made from
the code (every CLI subcommand and flag, every registry metric), every page is in the navigation and every code
fence is one the tests read, each section the old README held has a page, and the README is a landing page.

The build is ``mkdocs build --strict`` into a temporary folder, once per module (a few seconds).
"""

from __future__ import annotations

import argparse
import html
import re
from pathlib import Path

import pytest

from eccv_metric import REGISTRY
from eccv_metric.cli.main import build_parser
from tests.docs_blocks import DOCS
from tests.docs_blocks import ROOT
from tests.docs_blocks import nav_pages
from tests.docs_blocks import page_name
from tests.docs_blocks import pages

# each section of the README before the site (8d5ae68, 1,395 lines; its bold run-in sections too) and the page and
# heading that hold its text now
OLD_README = {
    "ECCV Caption on the Hugging Face stack (the two commands, the install)": ("getting-started.md", "Install"),
    "Quick start": ("getting-started.md", "Quick start"),
    "Benchmarks": ("benchmarks/index.md", "Every benchmark"),
    "Protocol choices": ("benchmarks/index.md", "Protocol choices"),
    "What each metric is": ("benchmarks/metrics.md", "The formulas"),
    "Inputs": ("guides/inputs.md", "In Python"),
    "Inputs: Rows and ids": ("guides/inputs.md", "Rows and ids"),
    "Inputs: Scores and embeddings, On a GPU": ("guides/inputs.md", "Score matrices and embeddings"),
    "Inputs: Every benchmark of a run at once": ("guides/inputs.md", "Every benchmark of a run at once"),
    "Inputs: Ranked lists": ("guides/inputs.md", "Ranked lists"),
    "Inputs: Correlations": ("guides/inputs.md", "Correlations"),
    "Ties": ("benchmarks/ties.md", "How the engine keeps it exact"),
    "Decisions where the official code crashes, returns junk or miscounts": (
        "benchmarks/official-code.md",
        "Decisions where the official code crashes, returns junk or miscounts",
    ),
    "From a model": ("models/dual-encoders.md", "Run one"),
    "From a model: Specs": ("models/dual-encoders.md", "Model specs"),
    "From a model: Items": ("models/dual-encoders.md", "Items: which images and texts"),
    "From a model: Encoding": ("models/dual-encoders.md", "Encoding"),
    "From a model: Decoders": ("models/dual-encoders.md", "Decoders"),
    "From a model: Several models": ("models/dual-encoders.md", "Several models"),
    "From a model: Cache": ("models/cache.md", "The embeddings cache"),
    "From a model: Reruns without the model": ("models/cache.md", "Reruns without the model"),
    "From a model: Provenance": ("models/cache.md", "Provenance"),
    "From a model: the Python block and how it is tested": ("models/dual-encoders.md", "How it is tested"),
    "Command line": ("guides/command-line.md", "Scoring them"),
    "Command line: Metrics beside benchmarks, one rule": ("guides/command-line.md", "Which metrics"),
    "Command line: For scripts (--json, --quiet, progress, errors)": (
        "guides/command-line.md",
        "Output, scripts and errors",
    ),
    "TREC files, BEIR / MTEB layout": ("guides/trec-mteb.md", "TREC files"),
    "TREC files: Relevance": ("guides/trec-mteb.md", "Relevance"),
    "TREC files: Ties": ("guides/trec-mteb.md", "Ties in runs"),
    "TREC files: the metric names of other tools": ("guides/trec-mteb.md", "The same metrics in other tools"),
    "TREC files: MTEB": ("guides/trec-mteb.md", "MTEB"),
    "Results on the Hub": ("guides/publishing.md", "Your model's results and their details"),
    "Results on the Hub: leaderboard --from-hub": ("guides/publishing.md", "Reading the leaderboard back"),
    "Dataset builder": ("data/index.md", "Building it"),
    "Dataset builder: configs": ("data/index.md", "Configs"),
    "Dataset builder: BEIR / MTEB layout": ("data/index.md", "BEIR / MTEB layout"),
    "Dataset builder: the card": ("data/index.md", "The card"),
    "Dataset builder: eval.yaml": ("data/index.md", "The benchmark's tasks: `eval.yaml`"),
    "Dataset builder: sources, --source-dir, --download": ("data/sources.md", "How sources are found and fetched"),
    "Dataset builder: push": ("guides/publishing.md", "Publishing the benchmark"),
    "evaluate module": ("evaluate-module.md", "`evaluate.load`"),
    "The Space": ("evaluate-module.md", "The Space"),
    "Comparing models": ("guides/comparing.md", "Two models, query by query"),
    "Architecture": ("contributing/architecture.md", "Architecture"),
    "Performance": ("performance/index.md", "The metric engine"),
    "Performance: Top-k strategy per machine": ("performance/history.md", "Top-k strategy per machine"),
    "Performance: Scoring a run's benchmarks": ("performance/history.md", "Scoring a run's benchmarks (issue 40)"),
    "The model path": ("performance/index.md", "A model run"),
    "The model path: the image rows": ("performance/history.md", "How the image rows are measured"),
    "The model path: Decoding workers on a CPU": ("performance/history.md", "Decoding workers on a CPU"),
    "The model path: Against CLIP_benchmark": ("performance/history.md", "Against CLIP_benchmark"),
    "The model path: on a GPU": ("performance/history.md", "On a GPU"),
    "Tests": ("contributing/tests.md", "Tests"),
    "License and citation": ("index.md", "License and citation"),
}
FENCE_LINE = re.compile(r"^(\s*)```+(.*)$")
READ_BY_TESTS = {"bash", "python"}  # the languages tests/docs_blocks.py extracts and runs or parses
SHOWN_ONLY = {"text", "bibtex", "yaml", "json"}  # output and data, never run


def headings(text: str) -> set[str]:
    """Every Markdown heading of a page, its text only (``{#anchor}`` attributes left out)."""
    return {re.sub(r"\s*\{#[^}]*\}$", "", m[1]).strip() for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_every_old_readme_section_has_a_page_that_holds_it():
    for old, (page, heading) in OLD_README.items():
        path = DOCS / page
        assert path.is_file(), f"{old}: {page} is missing"
        assert heading in headings(path.read_text()), f"{old}: no heading {heading!r} on {page}"


def test_every_page_is_in_the_navigation_and_every_nav_entry_exists():
    on_disk = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert on_disk == set(nav_pages())


@pytest.mark.parametrize("path", pages(), ids=page_name)
def test_every_code_fence_is_one_the_tests_read(path):
    """Fences start at the line's start and name a language the tests run or parse (or one only shown), so
    ``tests/docs_blocks.py`` cannot miss a block (an indented or unnamed fence would not be run)."""
    opening = True
    for number, line in enumerate(path.read_text().splitlines(), 1):
        match = FENCE_LINE.match(line)
        if not match:
            continue
        indent, info = match.groups()
        assert not indent, f"{page_name(path)}:{number}: an indented fence is not read by the tests"
        if opening:
            language = info.strip().split(" ")[0]
            assert language in READ_BY_TESTS | SHOWN_ONLY, f"{page_name(path)}:{number}: fence language {info!r}"
        opening = not opening
    assert opening, f"{page_name(path)}: a fence is not closed"


@pytest.mark.parametrize("path", pages(), ids=page_name)
def test_no_prose_line_starts_a_blockquote(path):
    """A wrapped line that starts with ``>`` (``>= 3`` of a threshold) renders as a quote: the pages have none."""
    inside = False
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            inside = not inside
        elif not inside:
            assert not line.lstrip().startswith(">"), f"{page_name(path)}:{number}: {line.strip()[:60]}"


def test_the_readme_is_a_landing_page_one_click_from_what_a_user_looks_for():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    links = set(re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text))
    local = {link for link in links if not link.startswith("http")}
    for link in local:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"
    wanted = {
        "docs/models/index.md": "--model",  # evaluating a model
        "docs/benchmarks/metrics.md": "mAP@R",  # what mAP@R means
        "docs/benchmarks/ties.md": "item given first",  # the tie rule
        "docs/guides/publishing.md": "push-results",  # publishing results
    }
    for page, content in wanted.items():
        assert page in local, f"the README does not link to {page}"
        assert content in (ROOT / page).read_text(), (page, content)
        assert page.removeprefix("docs/") in (DOCS / "index.md").read_text(), f"the site's home lacks {page}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """``mkdocs build --strict`` of the repository's mkdocs.yml into a temporary folder."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    out = tmp_path_factory.mktemp("site")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NO_MKDOCS_2_WARNING", "1")  # Material's end-of-life banner, printed on every build
        config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(out))
        assert config["strict"], "mkdocs.yml must build strictly: a broken link or anchor fails the build"
        build(config)  # raises mkdocs.exceptions.Abort on any warning (strict)
    return out


def page_text(site: Path, page: str) -> str:
    """The text of a built page, tags removed and entities decoded."""
    raw = (site / page.replace(".md", ".html")).read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def test_the_site_builds_strictly_with_every_page(site):
    for page in nav_pages():
        assert (site / page.replace(".md", ".html")).is_file(), page


def test_the_cli_reference_holds_every_subcommand_and_flag(site):
    text = page_text(site, "reference/cli.md")
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert len(sub.choices) >= 10
    for name, command in sub.choices.items():
        assert f"eccv-caption {name}" in text, name
        for action in command._actions:
            for flag in action.option_strings:
                assert flag in text, f"eccv-caption {name} {flag} is not on the command-line reference"
            if action.help and not action.option_strings:
                shown = action.metavar or action.dest
                assert f"{shown} (positional)" in text, f"eccv-caption {name}: positional {shown}"


def test_the_metric_names_page_holds_every_registry_metric(site):
    text = page_text(site, "reference/metric-names.md")
    for bench in REGISTRY:
        for name in [*bench.metric_names((1, 5, 10)), *bench.default_metric_names()]:
            assert name in text, name


def test_the_python_reference_shows_the_public_api(site):
    """Every name ``eccv_metric``, ``eccv_metric.models`` and ``eccv_metric.explore`` export (their ``__all__``) is
    on the Python reference, as rendered: a name added to the package's API without its entry on the page fails
    here."""
    import eccv_metric
    import eccv_metric.explore
    import eccv_metric.models

    text = page_text(site, "reference/python.md")
    public = [*eccv_metric.__all__, *eccv_metric.models.__all__, *eccv_metric.explore.__all__, "stable_topk", "compare"]
    assert len(public) >= 30
    for name in public:
        assert re.search(rf"\b{name}\b", text), f"{name} is exported but not on the Python reference"
    assert ":class:`" not in text and ":func:`" not in text  # reST roles shown as code (docs/griffe_roles.py)
