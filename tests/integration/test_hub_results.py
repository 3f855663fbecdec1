"""``push-results`` and ``leaderboard --from-hub`` with the real huggingface_hub client against the local fake Hub.

The benchmark is a real build (the wheel's positives: its eval.yaml and card as ``eccv-caption build`` writes
them); the numbers are real ones (``eccv-caption evaluate --demo``), with the provenance ``evaluate --model``
records. What is checked is what the Hub would receive: the files and commits (a pull request, or a commit to
main), the model card kept but for its model-index, the leaderboard read back; and every failure (no token,
a missing repo, a 403, no network, a dataset that is no benchmark) as one line naming the repo and the next
step, with nothing sent.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from eccv_caption_dataset.hub_folder import build
from tests.integration.fake_hub import FAKE_COMMIT
from tests.integration.fake_hub import FakeHub
from tests.unit.brute import percent

ROOT = Path(__file__).resolve().parents[2]
TOKENS = {"hf_me": ("me", True), "hf_other": ("other", True), "hf_read": ("me", False)}
CARD = "---\nlicense: mit\ntags:\n- clip\nlibrary_name: transformers\n---\n\n# My CLIP\n\nKept as it is.\n"


def cli(env: dict, *args: str, token: str | None = "hf_me") -> subprocess.CompletedProcess:
    env = dict(env) | ({"HF_TOKEN": token} if token else {})
    return subprocess.run(
        [sys.executable, "-m", "eccv_metric.cli", *args], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT
    )


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "eccv-caption"
    build(out, log=lambda _: None, repo_id="me/eccv-caption")
    return out


@pytest.fixture(scope="module")
def numbers(tmp_path_factory) -> dict:
    """Real numbers: the demo's, for the official five and ECCV's three (results JSON, fractions)."""
    home = tmp_path_factory.mktemp("demo")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(home), "HF_HUB_OFFLINE": "1"}
    done = cli(env, "evaluate", "--demo", "--benchmarks", "eccv_caption", "eccv", "--json", token=None)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.fixture()
def results(tmp_path, numbers) -> Path:
    provenance = {  # what evaluate --model records (eccv_metric.models.run), for a Hub model and Hub data
        "model": "hf:me/clip",
        "identity": {"spec": "hf:me/clip", "library": "transformers 5.0", "revision": "f" * 40, "weights": "ab" * 32},
        "data": "me/eccv-caption",
        "data_revision": FAKE_COMMIT,
        "package": "eccv-caption-hf 0.2.0",
        "device": "cpu",
        "precision": "fp32",
        "similarity": "cosine",
    }
    path = tmp_path / "res.json"
    path.write_text(json.dumps({**numbers, "provenance": provenance}))
    return path


@pytest.fixture()
def hub(tmp_path, bench):
    model = tmp_path / "repos" / "clip"
    model.mkdir(parents=True)
    (model / "README.md").write_text(CARD)
    (model / "config.json").write_text("{}")
    plain = tmp_path / "repos" / "plain"  # a dataset without eval.yaml: no benchmark
    plain.mkdir()
    (plain / "README.md").write_text("# data\n")
    datasets = {"me/eccv-caption": bench, "me/plain": plain}
    with FakeHub({}, models={"me/clip": model}, datasets=datasets, tokens=TOKENS) as fake:
        fake.env = fake.client_env(tmp_path / "home")
        fake.model = model
        yield fake


def printed_files(stdout: str) -> dict[str, str]:
    """The files a dry run prints, ``--- <path>`` then the file."""
    out, name = {}, None
    for line in stdout.splitlines():
        if line.startswith("--- "):
            name = line[4:]
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def test_the_build_registers_the_benchmark(bench):
    tasks = yaml.safe_load((bench / "eval.yaml").read_text())["tasks"]
    card = yaml.safe_load((bench / "README.md").read_text().split("\n---\n")[0][4:])
    splits = {c["config_name"]: {f["split"] for f in c["data_files"]} for c in card["configs"]}
    assert all(t["split"] in splits[t["config"]] for t in tasks)  # every task's config and split exist
    assert [t["id"] for t in tasks][:2] == ["eccv_map_at_r_i2t", "eccv_map_at_r_t2i"]
    assert not any(t["id"].startswith(("pmrp", "mscoco_fg", "cxc_sts")) for t in tasks)  # not in this build
    assert (
        "| `eccv_map_at_r_i2t` | ECCV Caption mAP@R, image-to-text | `positives` | `test` | percent (0-100) |"
        in (bench / "README.md").read_text()
    )


def test_dry_run_prints_the_files_and_sends_nothing(hub, results, numbers, bench):
    from huggingface_hub import parse_eval_result_entries

    done = cli(hub.env, "push-results", str(results), "--dry-run", "--model-index", token=None)
    assert done.returncode == 0, done.stderr
    assert hub.log == [] and hub.store.commits == []
    assert "would open a pull request on model me/clip (from the results' model hf:me/clip)" in done.stdout
    files = printed_files(done.stdout)
    card = yaml.safe_load(
        files.pop("README.md: its YAML's model-index holds these results, the rest of the card as it is")
    )
    tasks = {t["id"]: t for t in yaml.safe_load((bench / "eval.yaml").read_text())["tasks"]}
    assert len(files) == sum(len(by) for by in numbers.values()) == 12
    for path, text in files.items():
        (entry,) = parse_eval_result_entries(yaml.safe_load(text))  # the Hub's own parser
        metric, direction = entry.task_id.rsplit("_", 1)
        assert path == f".eval_results/eccv-caption_{entry.task_id}.yaml" and entry.task_id in tasks
        assert entry.value == percent(numbers[metric][direction])  # percent: the decimal shifted
        assert (entry.dataset_id, entry.dataset_revision) == ("me/eccv-caption", FAKE_COMMIT)
        assert (entry.source_name, entry.source_url) == (
            "eccv-caption-hf 0.2.0",
            "https://pypi.org/project/eccv-caption-hf/0.2.0/",
        )
    (model,) = card["model-index"]
    for result in model["results"]:
        direction = {"image-to-text": "i2t", "text-to-image": "t2i"}[result["task"]["type"]]
        task = tasks[f"{result['metrics'][0]['type']}_{direction}"]
        assert (result["dataset"]["config"], result["dataset"]["split"]) == (task["config"], task["split"])
        for metric in result["metrics"]:
            assert metric["value"] == percent(numbers[metric["type"]][direction])


def test_a_pull_request_by_default_in_one_commit(hub, results):
    dry = printed_files(cli(hub.env, "push-results", str(results), "--dry-run", token=None).stdout)
    before = {p.name: p.read_bytes() for p in hub.model.iterdir()}
    done = cli(hub.env, "push-results", str(results))
    assert done.returncode == 0, done.stderr
    (commit,) = hub.store.commits
    assert (commit["repo"], commit["create_pr"], commit["pr"], commit["parent"]) == ("me/clip", True, 1, FAKE_COMMIT)
    assert {path: data.decode() for path, data in commit["files"].items()} == dry  # what the dry run printed
    assert commit["summary"] == "Add ECCV Caption eval results (12 tasks)"
    assert "| `eccv_map_at_r_i2t` |" in commit["description"] and "hf:me/clip" in commit["description"]
    assert {p.name: p.read_bytes() for p in hub.model.iterdir()} == before  # main untouched
    assert done.stdout.rstrip().endswith(f"opened pull request {hub.url}/me/clip/discussions/1")
    sent = [(method, path.split("?")[0]) for method, path, _ in hub.log if method == "POST"]
    assert sent == [("POST", "/api/models/me/clip/preupload/main"), ("POST", "/api/models/me/clip/commit/main")]
    another = cli(hub.env, "push-results", str(results), token="hf_other")  # anyone may open a pull request
    assert another.returncode == 0 and hub.store.commits[-1]["pr"] == 2, another.stderr


def test_direct_with_model_index_keeps_the_card(hub, results, numbers):
    done = cli(hub.env, "push-results", str(results), "--direct", "--model-index")
    assert done.returncode == 0, done.stderr
    (commit,) = hub.store.commits
    assert not commit["create_pr"] and commit["pr"] is None and len(commit["files"]) == 13
    card = (hub.model / "README.md").read_text()
    assert card == commit["files"]["README.md"].decode()
    head, text = card.split("\n---\n", 1)
    assert text == CARD.split("\n---\n", 1)[1]
    meta = yaml.safe_load(head[4:])
    assert {k: v for k, v in meta.items() if k != "model-index"} == {
        "license": "mit",
        "tags": ["clip"],
        "library_name": "transformers",
    }
    values = {
        (r["task"]["type"], m["type"]): m["value"] for r in meta["model-index"][0]["results"] for m in r["metrics"]
    }
    assert values[("image-to-text", "eccv_map_at_r")] == percent(numbers["eccv_map_at_r"]["i2t"])
    assert sorted(p.name for p in (hub.model / ".eval_results").iterdir()) == sorted(
        Path(p).name for p in commit["files"] if p != "README.md"
    )


def test_leaderboard_from_hub_lists_the_pushed_models(hub, results, numbers, tmp_path):
    assert cli(hub.env, "push-results", str(results), "--direct").returncode == 0
    other = json.loads(results.read_text())
    other["provenance"]["model"] = "hf:other/clip-ft"
    (tmp_path / "other.json").write_text(json.dumps(other))
    hub.store.repos[("models", "other/clip-ft")] = hub.model.parent / "ft"
    (hub.model.parent / "ft").mkdir()
    assert cli(hub.env, "push-results", str(tmp_path / "other.json"), token="hf_me").returncode == 0  # a PR
    done = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", token=None)
    assert done.returncode == 0, done.stderr
    rows = {
        line[:44].strip(): line[44:].split()
        for line in done.stdout.splitlines()
        if line.startswith(("me/clip", "other/"))
    }
    assert set(rows) == {"me/clip", "other/clip-ft (PR #1)"}
    header = next(line for line in done.stdout.splitlines() if line.startswith("model"))
    columns = header.split()[1:]
    assert columns[:3] == ["mAP@R", "R-P", "ECCV"]  # the same columns as --with
    for name, cells in rows.items():
        want = [f"{50 * (numbers[m]['i2t'] + numbers[m]['t2i']):.2f}" for m in ("eccv_map_at_r", "eccv_rprecision")]
        assert cells[:2] == want, name
    assert "me/eccv-caption on the Hub: 2 leaderboard entries, 2 models shown" in done.stdout


def test_leaderboard_from_hub_without_huggingface_hubs_call(hub, results):
    """Where the installed huggingface_hub has no get_dataset_leaderboard: the documented HTTP call, same rows."""
    assert cli(hub.env, "push-results", str(results), "--direct").returncode == 0
    code = (
        "import sys; from huggingface_hub import HfApi; del HfApi.get_dataset_leaderboard; "
        "from eccv_metric.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    env = dict(hub.env) | {"HF_TOKEN": "hf_me"}
    args = ["leaderboard", "--from-hub", "me/eccv-caption"]
    old = cli(hub.env, *args)
    new = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    assert new.returncode == 0 and new.stdout == old.stdout and "\nme/clip " in new.stdout, new.stderr
    assert [p.split("?")[0] for m, p, _ in hub.log if "leaderboard" in p] == [
        "/api/datasets/me/eccv-caption/leaderboard"
    ] * 2


def one_line(done: subprocess.CompletedProcess, start: str, end: str) -> None:
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: {start}") and done.stderr.rstrip().endswith(end), done.stderr


def test_failures_are_one_line_naming_the_repo_and_the_next_step(hub, results, tmp_path):
    one_line(
        cli(hub.env, "push-results", str(results), token=None),
        "push-results to model me/clip: no Hugging Face token; log in with `hf auth login` or set HF_TOKEN",
        "then run push-results again",
    )
    assert hub.log == []
    one_line(
        cli(hub.env, "push-results", str(results), "--model-repo", "me/nothing"),
        "push-results to model me/nothing failed: the model repo me/nothing was not found on the Hub",
        "check --model-repo (`hf repo create me/nothing` makes it, if it is yours), then run push-results again",
    )
    one_line(
        cli(hub.env, "push-results", str(results), "--direct", token="hf_other"),
        "push-results to model me/clip failed: the Hub refused the token (403: ",
        "drop --direct to open a pull request instead, or use a token with write access to me/clip, "
        "then run push-results again",
    )
    one_line(
        cli(hub.env, "push-results", str(results), token="hf_read"),
        "push-results to model me/clip failed: the Hub refused the token (403: ",
        "a token that may open pull requests (write access), then run push-results again",
    )
    one_line(
        cli(hub.env, "push-results", str(results), "--dataset-repo", "me/plain"),
        f"{results} was scored on the Hub dataset me/eccv-caption, not --dataset-repo me/plain",
        "drop --dataset-repo (or evaluate on me/plain)",
    )
    local = json.loads(results.read_text())
    local["provenance"].update(data="/data/build", data_revision=None)
    (tmp_path / "local.json").write_text(json.dumps(local))
    one_line(
        cli(hub.env, "push-results", str(tmp_path / "local.json"), "--dataset-repo", "me/plain"),
        "push-results to model me/clip failed: the dataset me/plain has no eval.yaml, so it registers no tasks",
        "(`eccv-caption push --dataset-dir FOLDER --dataset-repo me/plain`), then run push-results again",
    )
    assert hub.store.commits == [] and (hub.model / "README.md").read_text() == CARD
    with socket.socket() as sock:  # a port nothing listens on: connections are refused at once
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    one_line(
        cli(hub.env | {"HF_ENDPOINT": closed}, "push-results", str(results)),
        f"push-results to model me/clip failed: could not reach the Hub at {closed} (",
        "check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE), then run push-results again",
    )
    one_line(
        cli(hub.env | {"HF_ENDPOINT": closed}, "leaderboard", "--from-hub", "me/eccv-caption"),
        f"leaderboard --from-hub me/eccv-caption failed: could not reach the Hub at {closed} (",
        "check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE), then run the leaderboard again",
    )
    one_line(
        cli(hub.env, "leaderboard", "--from-hub", "me/plain"),
        "leaderboard --from-hub me/plain: the Hub keeps no leaderboard for me/plain",
        "or rank your files with --with",
    )
    one_line(
        cli(hub.env, "leaderboard", "--from-hub", "me/missing"),
        "leaderboard --from-hub me/missing failed: the dataset me/missing was not found on the Hub",
        "check the repo id, then run the leaderboard again",
    )
    one_line(cli(hub.env, "leaderboard", "--from-hub", "eccv"), "--from-hub 'eccv' is not a Hub repo id", "")


def test_bad_inputs_send_nothing(hub, results, numbers, tmp_path):
    scores = tmp_path / "scores.json"  # what `evaluate --demo -o` (from scores, no model) writes
    scores.write_text(json.dumps(numbers))
    bad = json.loads(results.read_text())
    bad["eccv_f1"] = {"i2t": 0.5}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    for args, words in (
        ([str(scores)], "holds no provenance"),
        ([str(results), "--model-repo", "clip"], "--model-repo 'clip' is not a Hub repo id"),
        ([str(tmp_path / "bad.json")], "'eccv_f1' is not a metric the benchmark registers"),
    ):
        done = cli(hub.env, "push-results", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert hub.log == [] and hub.store.commits == []
