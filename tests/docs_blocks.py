"""The documentation's code blocks as a newcomer pastes them: README.md, then every page of the site (docs/, in
the navigation order of mkdocs.yml); its ```bash lines, and which of them the tests run rather than only parse.

A *line* is one command line of a block (a line ending in ``\\`` joined with the next; blank and comment-only lines
dropped). The unit layer checks that every line is valid bash and that every ``eccv-caption`` command in it parses
with the CLI's own argparse (tests/unit/test_docs_bash.py); the integration layer runs each page's blocks in order,
in one folder per page (tests/integration/test_docs_recipes.py). The lines only parsed are :data:`PARSE_ONLY`, each
with its reason.
"""

from __future__ import annotations

import doctest
import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```bash\n(.*?)^```", re.S | re.M)
ANY_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
SEPARATORS = {"&&", "||", ";", "|"}


def nav_pages() -> list[str]:
    """The site's pages (paths under docs/) in the order of mkdocs.yml's ``nav``."""
    out: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, str) and node.endswith(".md"):
            out.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    return out


def pages() -> list[Path]:
    """README.md, then every page of the site that exists, in navigation order."""
    return [ROOT / "README.md", *(DOCS / name for name in nav_pages() if (DOCS / name).is_file())]


def page_name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def blocks(text: str) -> list[tuple[str, str]]:
    """Every fenced block of a Markdown text, in order: (language, body)."""
    return ANY_FENCE.findall(text)


def python_blocks(text: str) -> list[str]:
    return [body for language, body in blocks(text) if language == "python"]


def not_run(code: str) -> str | None:
    """Why a ```python block is only compiled (:data:`PY_NOT_RUN`), or None: it runs."""
    return next((why for key, why in PY_NOT_RUN.items() if key in code), None)


# lines that are parsed but not run, and why (the command as written, its comment left out)
PARSE_ONLY = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && eccv-caption evaluate --demo": (
        "installs from the package index (its `eccv-caption evaluate --demo` runs on its own, below)"
    ),
    "apt-get update -qq && apt-get install -y -qq chromium && . .venv/bin/activate && pip install torch==2.13.0 && "
    'pip install -e ".[dev,space,docs]" && pip install --no-deps clip-benchmark==1.6.2 && '
    "python -m pytest -n 2 --dist loadfile": (
        "installs system and index packages and runs the whole suite (CI runs it: tests/unit/test_readme_ci.py)"
    ),
    'python -m pytest -n 2 -m "not slow"': (
        "runs the developer's loop, a suite within the suite (measured by tests/cpu_report.py, not run from a page)"
    ),
    'pip install -e ".[models]"': "installs torch and the model libraries from the package index",
    "eccv-caption build --output eccv_caption_hf --download": "downloads the sources from their canonical homes",
    "eccv-caption evaluate --model hf:openai/clip-vit-base-patch32 --data eccv_caption_hf -o clip_b32.json": (
        "downloads CLIP's weights and encodes 30,000 items (a GPU's work); the model path is tested offline with "
        "tiny models (tests/unit/test_models.py)"
    ),
    "eccv-caption leaderboard --with clip_b32.json": "reads the results of the model run above",
    "eccv-caption evaluate --model hf:google/siglip-base-patch16-224 --data eccv_caption_hf -o siglip.json "
    "--per-query siglip_pq.json": "downloads SigLIP's weights (a second model for compare; see CLIP's line)",
    "eccv-caption compare clip_b32_pq.json siglip_pq.json": (
        "reads two model runs' per-query files (docs/guides/comparing.md makes and compares its own)"
    ),
    "eccv-caption push --dataset-dir eccv_caption_hf --dataset-repo you/eccv-caption --space-repo you/eccv_map_at_r": (
        "uploads to the Hub (the --dry-run line above it runs)"
    ),
    "eccv-caption leaderboard --from-hub you/eccv-caption": "reads the Hub's leaderboard (tested against the fake Hub)",
    "eccv-caption push --dataset-dir eccv_caption_hf --dataset-repo you/eccv-caption": (
        "uploads the build to the Hub (tests/integration/test_push.py, a local fake of the Hub)"
    ),
    "python scripts/benchmark.py --skip-official-full --repeat 3": "a speed measurement: minutes, on a quiet machine",
    "python scripts/benchmark_deep.py --repeat 3": "a speed measurement: a minute, on a quiet machine",
    "python scripts/benchmark_models.py --preset tiny --device cpu --models 2": (
        "a speed measurement: minutes, on a quiet machine"
    ),
    "PYTHONPYCACHEPREFIX=/tmp/pyc python3 scripts/benchmark_models.py --preset b32 --precision fp16 --batch-size 256 "
    "--workers 15 --decode gpu --models 2 --profile": "a speed measurement on a GPU",
    # the model path's pages merged from the helpers' notes (issues 50, 52, 53): weights, GPUs or the Hub
    "eccv-caption evaluate --model hf:openai/clip-vit-base-patch32 --data eccv_caption_hf -o clip_b32.json "
    "--per-query clip_b32_pq.json": "downloads CLIP's weights and encodes 30,000 items (see the line above)",
    "eccv-caption push-results clip_b32.json --per-query clip_b32_pq.json --dataset-repo you/eccv-caption --dry-run": (
        "reads a model run's results and the Hub dataset's eval.yaml (tested against the local fake Hub)"
    ),
    "eccv-caption push-results clip_b32.json --per-query clip_b32_pq.json --dataset-repo you/eccv-caption": (
        "uploads a model run's results and details to the Hub (tests/integration/test_hub_results.py, fake Hub)"
    ),
    "eccv-caption evaluate --model hf:Salesforce/blip-itm-base-coco --data eccv_caption_hf --rerank-k 256 "
    "-o blip.json": "downloads BLIP's weights",
    "eccv-caption evaluate --model hf:Salesforce/blip-itm-base-coco --data eccv_caption_hf --rerank-k 256 "
    "--reference lavis": "downloads BLIP's weights",
    "eccv-caption evaluate --model hf:Salesforce/blip-itm-base-coco --data eccv_caption_hf --rerank-k 256 "
    "--reference lavis -o blip.json": "downloads BLIP's weights (the pair path runs offline on tiny models)",
    "eccv-caption evaluate --model hf:dandelin/vilt-b32-finetuned-coco --first-stage "
    "hf:openai/clip-vit-base-patch32 --data eccv_caption_hf --rerank-k 64": "downloads ViLT's and CLIP's weights",
    "eccv-caption evaluate --model hf:dandelin/vilt-b32-finetuned-coco --data eccv_caption_hf --benchmarks coco_5k "
    "eccv --protocol exhaustive --max-pairs 130000000 --precision fp16": "125M pairs: a GPU's hours",
    "eccv-caption evaluate --model hf:dandelin/vilt-b32-finetuned-coco --data eccv_caption_hf --benchmarks coco_5k "
    "eccv --protocol exhaustive --max-pairs 130000000 --precision fp16 -o vilt.json": "125M pairs: a GPU's hours",
    "torchrun --nproc_per_node 8 -m eccv_metric.cli evaluate --model hf:Salesforce/blip-itm-base-coco --data "
    "eccv_caption_hf --precision fp16 -o blip.json": "eight GPUs (torchrun with gloo on CPUs runs in the pair tests)",
    "SHARD=$((SLURM_ARRAY_TASK_ID + 1))": "a line of the SLURM script",
    "eccv-caption evaluate --model hf:dandelin/vilt-b32-finetuned-coco --data /shared/eccv_caption --protocol "
    'exhaustive --max-pairs 130000000 --precision fp16 --cache-dir /shared/eccv_cache --shard "$SHARD/16"': (
        "a SLURM array job's line"
    ),
    "eccv-caption evaluate --model hf:you/your-clip --data you/eccv-caption --benchmarks eccv_caption eccv "
    "-o results.json --per-query per_query.json --evidence evidence": "downloads a model and a dataset from the Hub",
    "eccv-caption verify --from-hub you/your-clip --dataset-repo you/eccv-caption": (
        "reads the Hub (tests/integration/test_verify_hub.py runs the page's lines against the fake Hub)"
    ),
    "eccv-caption verify --from-hub you/your-clip --dataset-repo you/eccv-caption --reencode 50 --model "
    "hf:you/your-clip": "reads the Hub and a model's weights (test_verify_hub.py runs it on the fake Hub, tiny model)",
    "eccv-caption push-results results.json --per-query per_query.json --dry-run": "asks the Hub (fake Hub tests)",
    "eccv-caption push-results results.json --per-query per_query.json": "uploads to the Hub (fake Hub tests)",
    "eccv-caption evaluate --run predictions/ECCVCaption_eccv-i2t_predictions.json --metrics eccv_map_at_r "
    "eccv_rprecision eccv_r1 -o mteb_results.json --per-query mteb_per_query.json": (
        "reads MTEB's predictions of an image task, which needs every test image (tests/integration/test_mteb.py)"
    ),
    "eccv-caption push-results mteb_results.json --per-query mteb_per_query.json --dataset-repo you/eccv-caption "
    "--model-repo you/your-clip --dry-run": "asks the Hub (fake Hub tests)",
    "eccv-caption leaderboard --from-hub you/eccv-caption -o board.csv": "reads the Hub (fake Hub tests)",
    "eccv-caption leaderboard --from-hub you/eccv-caption --significance": "reads the Hub (fake Hub tests)",
    "eccv-caption leaderboard --from-hub you/eccv-caption --verified-only": "reads the Hub (test_verify_hub.py)",
    "eccv-caption compare --from-hub you/your-clip other/clip-ft@refs/pr/1 --dataset-repo you/eccv-caption": (
        "reads the Hub (fake Hub tests)"
    ),
    "eccv-caption explore --from-hub you/your-clip --dataset-repo you/eccv-caption --directions t2i": (
        "reads the Hub (tests/integration/test_explore_hub.py runs the page's lines against the fake Hub)"
    ),
    "eccv-caption explore --from-hub you/your-clip --vs-from-hub you/your-blip --dataset-repo you/eccv-caption "
    "--html published.html": "reads the Hub (test_explore_hub.py runs it on the fake Hub)",
    "python scripts/benchmark_models.py --preset tiny --device cpu --skip clip_benchmark --warm-repeat 5 "
    "--folder /tmp/eccv_bm": "a speed measurement: minutes, on a quiet machine",
    "python scripts/benchmark_pairs.py --batch 256 --threads 1": "a speed measurement: minutes, on a quiet machine",
    "python scripts/benchmark_pairs.py --preset base --families blip --device cuda --precision fp16 --batch 256": (
        "a speed measurement on a GPU"
    ),
    "python scripts/benchmark_pair_runs.py --preset tiny --n-images 5000 --n-captions 25000 --pair-batch-size 256 "
    "--images 200 --per-image 768 --repeat 3 --folder /tmp/bench-pairs": (
        "a speed measurement: minutes, on a quiet machine"
    ),
    "python scripts/benchmark_pair_runs.py --gpu --preset base --precision fp16 --n-images 1000 --n-captions 5000 "
    "--images 64 --per-image 768 --skip processes rerank --folder /tmp/bench-pairs-gpu": "a speed measurement on a GPU",
    "python scripts/benchmark_checksums.py --dims 512 8 --repeat 7 --warm 1.49": (
        "a speed measurement, on a quiet machine"
    ),
    "python scripts/benchmark_explore.py --source-dir ../shared/data --space": (
        "a speed measurement: a 5K run's table, the report and the Space in a browser, minutes"
    ),
    "python scripts/benchmark_verify.py --repeat 3": "a speed measurement: a 5K run scored and verified, minutes",
}

# ```python blocks that are compiled but not run, and why: a block holding the key is not run
PY_NOT_RUN = {
    "hf:Salesforce/blip-itm-base-coco": "downloads BLIP's weights (the pair path runs offline on tiny models)",
    "class MyCrossEncoder": "a sketch: `[...]` stands for your model's scores",
    'cache_dir="results.txt"': "downloads CLIP's weights (shows the error a file given as the cache gives)",
    "CacheWarning": "downloads CLIP's weights (its warnings are tested offline: tests/unit/test_model_cache.py)",
    "libraries_quiet": "downloads CLIP's weights (quiet runs are tested offline: tests/unit/test_model_quiet.py)",
    "details_you__your-clip": "reads a details repo from the Hub",
    'eccv_metric.verify("results.json"': (
        "the page's `verify` line above recomputes the same (the function's own tests: tests/unit/test_evidence.py)"
    ),
}

# parse-only lines whose eccv-caption commands do run, alone (the install before them is what is not run)
ALSO_RUN = {"python3 -m venv .venv && . .venv/bin/activate && pip install -e . && eccv-caption evaluate --demo"}

# inputs a page reads from another page's block, which the page names in a line of its own: (page, python block)
PAGE_INPUTS = {
    "docs/guides/trec-mteb.md": [("docs/guides/command-line.md", 0)],
    "docs/guides/verify.md": [("docs/guides/command-line.md", 0)],
}

# what the recipes' placeholders stand for (links into ../shared/data: the only substitution)
PLACEHOLDERS = {
    "path/to/cxc": "cxc",
    "path/to/fg": "mscoco_fg",
    "path/to/instances_val2014.json": "coco/instances_karpathy_test.json",
    "path/to/sources": ".",
}


def bash_lines(text: str | None = None) -> list[str]:
    """Every command line of the ```bash blocks of ``text`` (default: every page, README first), in order."""
    if text is None:
        return [line for path in pages() for line in bash_lines(path.read_text())]
    out = []
    for block in FENCE.findall(text):
        block = re.sub(r"\\\n\s*", "", block)  # continuation lines joined, as bash reads them
        out += [line.strip() for line in block.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return out


def command(line: str) -> str:
    """The line without its trailing comment, as bash reads it (quotes kept)."""
    words = shlex.shlex(line, posix=False, punctuation_chars=False)
    words.whitespace_split = True
    words.commenters = "#"
    return " ".join(words)


def cli_calls(line: str) -> list[list[str]]:
    """The argv of every ``eccv-caption`` command of a line (commands split at ``&&``, ``||``, ``;``, ``|``)."""
    calls: list[list[str]] = [[]]
    for word in shlex.split(line, comments=True):
        if word in SEPARATORS:
            calls.append([])
        else:
            calls[-1].append(word)
    return [call[1:] for call in calls if call and call[0] == "eccv-caption"]


def run_block(code: str, where: str, cwd: Path, env: dict[str, str], prefix: str = "") -> None:
    """A ```python block: a block of ``>>>`` lines is a doctest (its outputs checked, in this process); any other
    block runs in a fresh interpreter (``prefix`` first) in ``cwd`` and must exit 0 (timeout 15 min)."""
    if any(line.lstrip().startswith(">>>") for line in code.splitlines()):
        test = doctest.DocTestParser().get_doctest(code, {}, where, where, 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test)
        result = runner.summarize(verbose=False)
        assert result.attempted and not result.failed, f"{where}: doctest failed"
        return
    done = subprocess.run(
        [sys.executable, "-c", prefix + code], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, f"{where} failed:\n{code}\n{done.stderr[-3000:]}"
