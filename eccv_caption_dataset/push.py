"""Upload the built dataset folder to a Hub dataset repo and the metric module to a gradio Space.

The token comes from huggingface_hub's usual places (``HF_TOKEN`` or
``hf auth login``). ``dry_run`` lists exactly what would be sent. Each repo is
made equal to its folder: files of an earlier push that the folder no longer
has are deleted (``upload_folder(delete_patterns="*")``; ``.gitattributes`` stays).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.files import write_text_atomic
from eccv_metric.hub.repos import check_repo_id
from eccv_metric.hub.repos import from_the_hub
from eccv_metric.hub.repos import hub_failure

PACKAGE = Path(__file__).resolve().parents[1] / "eccv_metric"
MODULE = "eccv_map_at_r"
SPACE_FILES = ("README.md", "app.py", "requirements.txt")
_SCRIPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
BUILD_EXTRAS = ("README.md", "LICENSE.md", "eval.yaml", ".gitattributes")  # besides the configs' Parquet files


def check_build(folder: Path) -> list[str]:
    """The files of a folder ``eccv-caption build`` wrote (relative paths), or an error saying why it is not one:
    its card's YAML lists the configs, every config's files exist, and nothing else is there to be uploaded."""
    what = f"dataset_dir= {folder} is not a built dataset folder"
    then = "give the folder `eccv-caption build --output` wrote"
    if not folder.is_dir():
        raise EvaluationError(f"{what} (no such folder); {then}")
    card = folder / "README.md"
    text = card.read_text(encoding="utf-8", errors="replace") if card.is_file() else ""
    head = text.split("\n---\n", 1)[0].removeprefix("---\n") if text.startswith("---\n") else ""
    try:
        meta = yaml.safe_load(head) if head else None
    except yaml.YAMLError:
        meta = None
    configs = meta.get("configs") if isinstance(meta, dict) else None
    if not card.is_file() or not isinstance(configs, list) or not any(_is_config(c, "positives") for c in configs):
        raise EvaluationError(f"{what} (no README.md card listing its configs, positives among them); {then}")
    files = sorted(
        os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
        for root, _, names in os.walk(folder, followlinks=True)
        for name in names
    )
    patterns = [
        entry["path"] for c in configs if isinstance(c, dict) for entry in c.get("data_files") or [] if "path" in entry
    ]
    empty = [pattern for pattern in patterns if not fnmatch.filter(files, pattern)]
    if empty:
        raise EvaluationError(f"{what}: its card names files it does not have ({_few(empty)}); {then}")
    extra = [f for f in files if f not in BUILD_EXTRAS and not any(fnmatch.fnmatch(f, p) for p in patterns)]
    if extra:
        raise EvaluationError(f"{what}: it holds files a build does not write ({_few(extra)}); {then}")
    return files


def _few(paths: list[str]) -> str:
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _is_config(entry: object, name: str) -> bool:
    return isinstance(entry, dict) and entry.get("config_name") == name


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
    # everything is checked before anything is changed or sent
    if dataset_repo and not dataset_dir:
        raise EvaluationError("dataset_repo= needs dataset_dir= (a folder made by `eccv-caption build`)")
    if dataset_dir and not dataset_repo:
        raise EvaluationError("dataset_dir= needs dataset_repo= (the Hub dataset repo to upload it to)")
    if dataset_repo:
        check_repo_id(dataset_repo, "dataset_repo", "you/eccv-caption")
        built = check_build(Path(dataset_dir))  # type: ignore[arg-type]
    if space_repo:
        check_repo_id(space_repo, "space_repo", "you/eccv_map_at_r")
    script = script_name(space_repo) if space_repo else MODULE
    plan: dict[str, tuple[str, Path]] = {}
    staging = Path(tempfile.mkdtemp(prefix="eccv-space-"))
    try:
        if dataset_repo:  # the folder as it goes up, its card pointed at the repo; the build itself is untouched
            staged = stage_build(Path(dataset_dir), built, dataset_repo, staging / "dataset")  # type: ignore[arg-type]
            plan[dataset_repo] = ("dataset", staged)
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
                try:
                    _upload(repo, repo_type, folder, private, revision, token)
                except Exception as exc:
                    if not from_the_hub(exc):
                        raise
                    done = list(sent)[:-1]
                    what = f"push to {repo_type} {repo}" + (f" ({', '.join(done)} already uploaded)" if done else "")
                    raise EvaluationError(hub_failure(exc, what, "push again")) from None
                if repo_type == "dataset":  # uploaded: the local card now names the repo too (written atomically)
                    set_card_repo(Path(dataset_dir), repo)  # type: ignore[arg-type]
        return sent
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def stage_build(folder: Path, files: list[str], repo: str, dest: Path) -> Path:
    """The built folder as it is uploaded, without changing it (a push that fails leaves it as it was): links to
    its ``files``, and its card with the usage snippets pointed at ``repo`` (:func:`card_for_repo`)."""
    for name in files:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name == "README.md":
            target.write_text(card_for_repo((folder / name).read_text(encoding="utf-8"), repo), encoding="utf-8")
            continue
        try:
            target.symlink_to((folder / name).resolve())
        except OSError:  # no symbolic links here: a copy
            shutil.copy2(folder / name, target)
    return dest


def set_card_repo(folder: Path, repo: str) -> None:
    """Point the card's usage snippets at ``repo`` (they name the repo the folder was built for)."""
    card = folder / "README.md"
    text = card.read_text()
    new = card_for_repo(text, repo)
    if new != text:
        write_text_atomic(card, new)


def card_for_repo(text: str, repo: str) -> str:
    """A card's text with its usage snippets naming ``repo``."""
    new = re.sub(r'load_dataset\("[^"]*"', f'load_dataset("{repo}"', text)
    new = re.sub(r'GroundTruth\.from_dataset\("[^"]*"\)', f'GroundTruth.from_dataset("{repo}")', new)
    new = re.sub(r"load_dataset\('[^']*'", f"load_dataset({repo!r}", new)
    return re.sub(r"(--data|--dataset-repo|leaderboard --from-hub) [^\s`]+", lambda m: f"{m.group(1)} {repo}", new)


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
