"""Upload the built dataset folder to a Hub dataset repo and the metric module to a gradio Space.

The token comes from huggingface_hub's usual places (``HF_TOKEN`` or
``hf auth login``). ``dry_run`` lists exactly what would be sent. Each repo is
made equal to its folder: files of an earlier push that the folder no longer
has are deleted (``upload_folder(delete_patterns="*")``; ``.gitattributes`` stays).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric.core.files import write_text_atomic

PACKAGE = Path(__file__).resolve().parents[1] / "eccv_metric"
MODULE = "eccv_map_at_r"
SPACE_FILES = ("README.md", "app.py", "requirements.txt")
_SCRIPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def script_name(space_repo: str) -> str:
    """The module script's name in a Space: ``evaluate.load("<user>/<space>")`` downloads ``<space>.py`` (only
    that file) and imports it as a module, so the script is staged under the Space's own name."""
    name = space_repo.rsplit("/", 1)[-1]
    if space_repo.count("/") != 1 or not _SCRIPT_NAME.fullmatch(name):
        raise ValueError(
            f"Space {space_repo!r}: evaluate.load('<user>/<space>') fetches '<space>.py' and imports it as a module, "
            "so name the Space <user>/<letters, digits, '_' or '-'> (no '.'), e.g. you/eccv_map_at_r"
        )
    return name


def stage_space(dest: str | Path, name: str = MODULE) -> Path:
    """The Space folder: the metric module (as ``<name>.py``: the Space's name), its card, the gradio app,
    requirements and our ``eccv_metric`` source.

    The Hub builds a Space by installing ``requirements.txt`` before the repository's other files are in
    place, so a local wheel named there is not found; the package's source sits beside ``app.py``
    instead (the app's folder is on ``sys.path``) and ``requirements.txt`` names only PyPI packages.
    ``evaluate.load("<user>/<space>")`` reads only ``<space>.py``, which imports ``eccv_metric`` from the
    installed package (``pip install eccv-caption-hf``: its import error says so).
    """
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(EVALUATE_MODULE_DIR / f"{MODULE}.py", dest / f"{name}.py")
    for file in SPACE_FILES:
        shutil.copy2(EVALUATE_MODULE_DIR / file, dest / file)
    local = [line for line in (dest / "requirements.txt").read_text().split() if "/" in line or line.endswith(".whl")]
    if local:
        raise ValueError(f"requirements.txt must name PyPI packages only (the Hub cannot see {local} at install time)")
    shutil.copytree(
        PACKAGE, dest / PACKAGE.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"), dirs_exist_ok=True
    )
    return dest


def listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.relative_to(folder).as_posix(), p.stat().st_size) for p in folder.rglob("*") if p.is_file())


def push(
    dataset_dir: str | Path | None = None,
    dataset_repo: str | None = None,
    space_repo: str | None = None,
    private: bool = False,
    revision: str | None = None,
    dry_run: bool = False,
    token: str | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, list[tuple[str, int]]]:
    """Create the repos if needed and upload; returns {repo: [(path, size), ...]} of what was (or would be) sent."""
    if dataset_repo and not dataset_dir:
        raise ValueError("a dataset repo needs --dataset-dir (a folder made by `eccv-caption build`)")
    if dataset_dir and not (Path(dataset_dir) / "README.md").is_file():
        raise ValueError(f"{dataset_dir} is not a built dataset folder (no README.md)")
    script = script_name(space_repo) if space_repo else MODULE  # refused before anything is changed or sent
    plan: dict[str, tuple[str, Path]] = {}
    staging = Path(tempfile.mkdtemp(prefix="eccv-space-"))
    try:
        if dataset_repo:
            plan[dataset_repo] = ("dataset", Path(dataset_dir))  # type: ignore[arg-type]
            if not dry_run:
                set_card_repo(Path(dataset_dir), dataset_repo)  # type: ignore[arg-type]
        if space_repo:
            plan[space_repo] = ("space", stage_space(staging / "space", script))
        sent = {}
        for repo, (repo_type, folder) in plan.items():
            files = listing(folder)
            sent[repo] = files
            log(
                f"{'would upload' if dry_run else 'uploading'} {len(files)} files to {repo_type} {repo}"
                + (f" @ {revision}" if revision else "")
                + " (files of the repo not among them are deleted, .gitattributes kept)"
            )
            for path, size in files:
                log(f"  {path} ({size:,} bytes)")
            if not dry_run:
                _upload(repo, repo_type, folder, private, revision, token)
        return sent
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def set_card_repo(folder: Path, repo: str) -> None:
    """Point the card's usage snippets at ``repo`` (they name the repo the folder was built for)."""
    card = folder / "README.md"
    text = card.read_text()
    new = re.sub(r'load_dataset\("[^"]*"', f'load_dataset("{repo}"', text)
    new = re.sub(r'GroundTruth\.from_dataset\("[^"]*"\)', f'GroundTruth.from_dataset("{repo}")', new)
    new = re.sub(r"load_dataset\('[^']*'", f"load_dataset({repo!r}", new)
    if new != text:
        write_text_atomic(card, new)


def _upload(repo: str, repo_type: str, folder: Path, private: bool, revision: str | None, token: str | None) -> None:
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    extra = {"space_sdk": "gradio"} if repo_type == "space" else {}
    api.create_repo(repo, repo_type=repo_type, private=private, exist_ok=True, **extra)
    if revision:
        api.create_branch(repo, repo_type=repo_type, branch=revision, exist_ok=True)
    api.upload_folder(
        folder_path=str(folder),
        repo_id=repo,
        repo_type=repo_type,
        revision=revision,
        commit_message="Upload ECCV Caption " + ("dataset" if repo_type == "dataset" else "metric Space"),
        delete_patterns="*",  # the folder is the whole repo: files of an earlier push go (.gitattributes stays)
    )
