"""The package as users get it: one name, one version, the wheel and sdist, and the Hub-loaded metric.

``evaluate.load("<user>/<space>")`` runs against ``fake_hub.FakeHub`` (127.0.0.1 only; requests meant for
other hosts are trapped and fail the test). Each load runs in a subprocess: evaluate, datasets and
huggingface_hub read their endpoints and caches at import, and a warm module cache would hide a failed
lookup. The slow test builds the wheel and sdist (``python -m build``, isolated: setuptools from PyPI),
runs ``twine check --strict``, installs the wheel with ``pip install <wheel>`` into a fresh venv (its
dependencies from PyPI, as a user gets them) and scores through ``evaluate.load`` of the staged Space
served by the fake Hub; about a minute.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pytest

import eccv_metric
from eccv_caption_dataset.push import script_name
from eccv_caption_dataset.push import stage_space
from eccv_metric import EVALUATE_MODULE_DIR
from eccv_metric.core.about import DISTRIBUTION
from tests.fixtures import ROOT
from tests.integration.fake_hub import FakeHub

CLIENT = textwrap.dedent(
    """\
    import json, sys
    for name in json.loads(sys.argv[2]):  # simulate "not installed" for these top-level packages
        sys.modules[name] = None
    try:
        import evaluate
        metric = evaluate.load(sys.argv[1])
        from eccv_metric import Metrics
        gt = Metrics().gt
        t2i = [[int(gt.image_ids[i])] for i in gt.caption_image]  # every caption ranks its own image first
        result = metric.compute(predictions=t2i, references=gt.caption_ids.tolist(), directions=["t2i"] * len(t2i),
                                target_metrics=["coco_5k_r1", "eccv_r1"])
        import eccv_metric
        out = {"ok": True, "module": type(metric).__module__, "result": result, "eccv_metric": eccv_metric.__file__}
    except Exception as exc:
        out = {"ok": False, "error": type(exc).__name__, "message": str(exc)}
    print("RESULT " + json.dumps(out))
    """
)
EXPECTED = {"coco_5k_r1/t2i": 1.0, "eccv_r1/t2i": 1.0}


def load(python: str, hub: FakeHub, home: Path, target: str, block: tuple[str, ...] = ()) -> tuple[dict, list[str]]:
    home.mkdir(parents=True, exist_ok=True)
    env = hub.client_env(home)
    env.pop("PYTHONPATH", None)
    before = len(hub.log)
    done = subprocess.run(
        [python, "-c", CLIENT, target, json.dumps(list(block))],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=home,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT ") :]), [f"{m} {p} {s}" for m, p, s in hub.log[before:]]


def test_one_name_and_one_version_everywhere():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^name = "([^"]+)"', text, re.M).group(1) == DISTRIBUTION
    assert 'dynamic = ["version"]' in text and 'version = { attr = "eccv_metric.core.about.__version__" }' in text
    assert importlib.metadata.version(DISTRIBUTION) == eccv_metric.__version__  # the installed metadata
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## (\S+)", changelog, re.M).group(1) == eccv_metric.__version__
    from eccv_caption_dataset.card import CARD_BODY
    from eccv_caption_dataset.mteb_layout import MTEB_SECTION

    for card in (
        CARD_BODY,
        MTEB_SECTION,
        (EVALUATE_MODULE_DIR / "README.md").read_text(),
        (ROOT / "README.md").read_text(),
    ):
        assert f"pip install {DISTRIBUTION}" in card or f'pip install "{DISTRIBUTION}[mteb]"' in card
    assert "pip install eccv_metric" not in (ROOT / "README.md").read_text()


def test_every_eccv_metric_import_of_the_module_hints_the_distribution():
    """evaluate's missing-module error names the pip package from a `# From:` comment on each import line."""
    from evaluate.loading import get_imports

    script = EVALUATE_MODULE_DIR / "eccv_map_at_r.py"
    ours = [i for i in get_imports(str(script)) if i[1] == "eccv_metric"]
    lines = [line for line in script.read_text().splitlines() if re.match(r"(from|import) eccv_metric\b", line)]
    assert len(ours) == len(lines) >= 5
    assert {i[:3] for i in ours} == {("library", "eccv_metric", DISTRIBUTION)}


@pytest.fixture()
def hub_spaces(tmp_path):
    spaces = {
        repo: stage_space(tmp_path / "spaces" / repo, script_name(repo))
        for repo in ("me/eccv_map_at_r", "me/retrieval-metrics")
    }
    with FakeHub(spaces) as hub:
        yield hub
    assert hub.escaped == [], f"requests meant for other hosts: {hub.escaped}"


def test_evaluate_load_finds_the_script_under_the_space_name(hub_spaces, tmp_path):
    result, requests = load(sys.executable, hub_spaces, tmp_path / "home", "me/retrieval-metrics")
    assert result["ok"], result
    assert result["result"] == EXPECTED and result["module"].startswith(
        "evaluate_modules.metrics.me--retrieval-metrics."
    )
    assert [r.split()[1].rsplit("/", 1)[1] for r in requests] == ["retrieval-metrics.py"] * 3  # HEAD v0.4.6, HEAD, GET


def test_without_the_package_the_error_says_what_to_install(hub_spaces, tmp_path):
    result, requests = load(sys.executable, hub_spaces, tmp_path / "home", "me/eccv_map_at_r", ("eccv_metric",))
    assert result["error"] == "ImportError" and f"pip install {DISTRIBUTION}'" in result["message"], result
    assert len(requests) == 3  # nothing beyond the script is fetched


@pytest.mark.parametrize("repo", ["me/eccv.map", "me/x/y", "eccv_map_at_r", "me/-x"])
def test_push_refuses_space_names_evaluate_cannot_load(repo):
    with pytest.raises(ValueError, match="fetches '<space>.py' and imports it as a module"):
        script_name(repo)


@pytest.mark.slow
def test_wheel_and_sdist_build_pass_twine_and_the_wheel_alone_scores_through_the_hub(tmp_path):
    src = tmp_path / "src"
    junk = ("__pycache__", "*.pyc", ".git", ".venv", "*.egg-info", "build", "dist", ".ruff_cache", ".pytest_cache")
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(*junk))
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)], tmp_path)
    files = sorted(dist.iterdir())
    version = eccv_metric.__version__
    assert [p.name for p in files] == [
        f"eccv_caption_hf-{version}-py3-none-any.whl",
        f"eccv_caption_hf-{version}.tar.gz",
    ]
    assert "PASSED" in run([sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], tmp_path)
    wheel_names = zipfile.ZipFile(files[0]).namelist()
    for name in ("eccv_map_at_r.py", "app.py", "requirements.txt", "README.md"):
        assert f"eccv_metric/hub/eccv_map_at_r/{name}" in wheel_names
    assert f"eccv_caption_hf-{version}.dist-info/licenses/LICENSE" in wheel_names
    assert not any("/tests/" in n for n in tarfile.open(files[1]).getnames())
    # a fresh venv: the wheel, its dependencies from PyPI, nothing of this checkout
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(files[0])], tmp_path)
    where = run([python, "-c", "import eccv_metric; print(eccv_metric.__file__, eccv_metric.__version__)"], tmp_path)
    assert where.split() == [
        str(
            venv
            / "lib"
            / f"python{sys.version_info[0]}.{sys.version_info[1]}"
            / "site-packages"
            / "eccv_metric"
            / "__init__.py"
        ),
        version,
    ]
    assert "export-trec" in run([str(venv / "bin" / "eccv-caption"), "--help"], tmp_path)
    space = tmp_path / "space" / "eccv_map_at_r"
    run(
        [
            python,
            "-c",
            "import sys; from eccv_caption_dataset.push import stage_space; stage_space(sys.argv[1])",
            str(space),
        ],
        tmp_path,
    )
    with FakeHub({"me/eccv_map_at_r": space}) as hub:
        result, _ = load(python, hub, tmp_path / "home", "me/eccv_map_at_r")
        local, _ = load(python, hub, tmp_path / "home_local", str(space))
    assert hub.escaped == []
    for out in (result, local):
        assert out["ok"], out
        assert out["result"] == EXPECTED and out["eccv_metric"].startswith(str(venv))
    # the staged app.py imports the Space's own eccv_metric copy (gradio itself comes from the Space's requirements.txt,
    # not from the wheel: the handler behind the Score button runs without it)
    app = (
        "import sys, eccv_metric, app; assert eccv_metric.__file__.startswith(sys.argv[1]); "
        "answer = app.space.score(None, app.EXAMPLE, [], ['eccv_r1'], '1', True); "
        "assert answer.ok, answer.message; print(answer.message)"
    )
    status = run([python, "-c", app, str(space)], space)
    assert status.startswith("scored 2 i2t and 2 t2i ranked lists"), status


def run(command: list[str], cwd: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=900)
    assert done.returncode == 0, f"{command[:4]}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_the_models_extra_keeps_the_users_own_torch(tmp_path):
    """`pip install -e ".[models]"` into a venv that already holds torch 2.14.1 (another release than the 2.13.0 CI
    tests on, a CUDA build: a user's own) keeps it: the extras ask for a range, never a pin.

    torch 2.14.1 goes in without its CUDA libraries (``--no-deps``: 1.2 GB instead of 4 GB; this machine's pip finds
    the wheel on disk, elsewhere it is a 555 MB download), and the project's install is pip's own plan for it
    (``--dry-run --report``): the resolver's full answer, without unpacking transformers and the CUDA libraries it
    would add. With the pin of 5401d09 (``torch==2.13.0``) the plan replaces torch.
    """
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    run([*pip, "install", "--quiet", "--no-deps", "torch==2.14.1"], tmp_path)
    report = tmp_path / "plan.json"
    run([*pip, "install", "--quiet", "--dry-run", "--report", str(report), "-e", f"{ROOT}[models]"], tmp_path)
    plan = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert "transformers" in plan and "sentence-transformers" in plan, sorted(plan)
    assert "torch" not in plan, f"the [models] install would replace torch 2.14.1 by {plan.get('torch')}"
    kept = run([str(venv / "bin" / "python"), "-m", "pip", "show", "torch"], tmp_path)
    assert "Version: 2.14.1" in kept
