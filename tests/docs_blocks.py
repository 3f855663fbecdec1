"""The documentation's code blocks as a newcomer pastes them: README.md, then every page of the site (docs/, in
the navigation order of mkdocs.yml); its ```bash lines, and which of them the tests run rather than only parse.

A *line* is one command line of a block (a line ending in ``\\`` joined with the next; blank and comment-only lines
dropped). The unit layer checks that every line is valid bash and that every ``eccv-caption`` command in it parses
with the CLI's own argparse (tests/unit/test_docs_bash.py); the integration layer runs each page's blocks in order,
in one folder per page (tests/integration/test_docs_recipes.py). The lines only parsed are :data:`PARSE_ONLY`, each
with its reason.
"""

from __future__ import annotations

import re
import shlex
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


# lines that are parsed but not run, and why (the command as written, its comment left out)
PARSE_ONLY = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && eccv-caption evaluate --demo": (
        "installs from the package index (its `eccv-caption evaluate --demo` runs on its own, below)"
    ),
    "apt-get update -qq && apt-get install -y -qq chromium && . .venv/bin/activate && "
    'pip install -e ".[dev,space,docs]" && pip install --no-deps clip-benchmark==1.6.2 && '
    "python -m pytest -n 2 --dist loadfile": (
        "installs system and index packages and runs the whole suite (CI runs it: tests/unit/test_readme_ci.py)"
    ),
    'pip install -e ".[models]"': "installs torch and the model libraries from the package index",
    "eccv-caption build --output eccv_caption_hf --source-dir coco/ --download": "downloads the COCO images",
    "eccv-caption evaluate --model hf:openai/clip-vit-base-patch32 --data eccv_caption_hf -o clip_b32.json": (
        "downloads CLIP's weights and encodes 30,000 items (a GPU's work); the model path is tested offline with "
        "tiny models (tests/unit/test_models.py)"
    ),
    "eccv-caption leaderboard --with clip_b32.json": "reads the results of the model run above",
    "eccv-caption evaluate --run predictions/ECCVCaption_eccv-i2t_predictions.json --metrics eccv_map_at_r "
    "eccv_rprecision": "reads MTEB's predictions of a model run (tests/integration/test_mteb.py scores real ones)",
    "eccv-caption build --output eccv_caption_hf --download": "downloads the sources from their canonical homes",
    "eccv-caption push --dataset-dir eccv_caption_hf --dataset-repo you/eccv-caption --space-repo you/eccv_map_at_r": (
        "uploads to the Hub (the --dry-run line above it runs)"
    ),
    "eccv-caption evaluate --model hf:you/your-clip --data you/eccv-caption --benchmarks eccv_caption eccv "
    "-o results.json": "downloads a model and a dataset from the Hub (the model path runs offline in tests/unit)",
    "eccv-caption push-results results.json --dry-run": (
        "reads the Hub dataset's eval.yaml (tests/integration/test_hub_results.py runs it against the local fake Hub)"
    ),
    "eccv-caption push-results results.json": "uploads to the Hub (tested against the local fake Hub)",
    "eccv-caption push-results results.json --direct --model-index": "uploads to the Hub (tested against the fake Hub)",
    "eccv-caption leaderboard --from-hub you/eccv-caption": "reads the Hub's leaderboard (tested against the fake Hub)",
}

# parse-only lines whose eccv-caption commands do run, alone (the install before them is what is not run)
ALSO_RUN = {"python3 -m venv .venv && . .venv/bin/activate && pip install -e . && eccv-caption evaluate --demo"}


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
