"""``push-results`` with the real huggingface_hub client against the local fake Hub: numbers with their evidence.

The benchmark is a real build (its eval.yaml and card as ``eccv-caption build`` writes them); the numbers and
per-query values are real ones (``evaluate --demo``), with the provenance ``evaluate --model`` records. What is
checked is what the Hub would receive: the details commit (Parquet holding exactly the per-query values) and the
model repo's files pointing at it, one pull request per model kept current, a commit to main, the model card kept
but for its model-index; and every failure as one line naming the repo and the next step, with nothing sent.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest
import yaml

from eccv_metric.cli.main import main
from tests.integration import hub_world
from tests.integration.fake_hub import FAKE_COMMIT
from tests.integration.hub_world import CARD
from tests.integration.hub_world import add_model
from tests.integration.hub_world import cli
from tests.integration.hub_world import entries
from tests.integration.hub_world import one_line
from tests.integration.hub_world import parquet_rows
from tests.integration.hub_world import printed_files
from tests.integration.hub_world import resolve
from tests.integration.hub_world import sealed
from tests.integration.hub_world import write_run
from tests.unit.brute import percent

bench, run, hub, here = hub_world.bench, hub_world.run, hub_world.hub, hub_world.here  # the fixtures


@pytest.fixture()
def results(tmp_path, run):
    return write_run(tmp_path / "run", run)


def test_the_build_registers_the_benchmark(bench):
    data = yaml.safe_load((bench / "eval.yaml").read_text())
    assert data["evaluation_framework"] == "mteb"  # one of the Hub's list (huggingface.js eval.ts)
    tasks = data["tasks"]
    card = yaml.safe_load((bench / "README.md").read_text().split("\n---\n")[0][4:])
    splits = {c["config_name"]: {f["split"] for f in c["data_files"]} for c in card["configs"]}
    assert all(t["split"] in splits[t["config"]] for t in tasks)  # every task's config and split exist
    assert [t["id"] for t in tasks][:2] == ["eccv_map_at_r_i2t", "eccv_map_at_r_t2i"]
    assert not any(t["id"].startswith(("pmrp", "mscoco_fg", "cxc_sts")) for t in tasks)  # not in this build
    assert "`eval.yaml` names `evaluation_framework: mteb`" in (bench / "README.md").read_text()


def test_dry_run_prints_both_repos_and_sends_nothing(hub, results, run):
    numbers, per_query = run
    done = cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert {method for method, _, _ in hub.log} <= {"GET", "HEAD"} and hub.store.commits == []
    assert hub.store.created == []
    assert "would create and commit to dataset me/details_me__clip, one commit of the per-query values behind the " \
        "numbers: 14 added" in done.stdout  # fmt: skip
    assert "would open a pull request on model me/clip, one commit: 12 added (from the results' model hf:me/clip)" \
        in done.stdout  # fmt: skip
    files = printed_files(done.stdout)
    evals = {p: yaml.safe_load(t)[0] for p, t in files.items() if p.startswith(".eval_results/")}
    assert len(evals) == 12
    for path, item in evals.items():
        task = item["dataset"]["task_id"]
        metric, direction = task.rsplit("_", 1)
        assert path == f".eval_results/me--eccv-caption--{task}.yaml"
        assert item["value"] == percent(numbers[metric][direction])
        assert item["source"]["url"] == f"{hub.url}/datasets/me/details_me__clip/tree/<the details commit>"
        assert item["date"] == "2026-08-25T10:30:00Z"
    shown = [line for line in done.stdout.splitlines() if line.startswith("  add data/") and line.endswith(" bytes)")]
    assert len(shown) == sum(len(by) for by in per_query.values()) == 12
    summary = json.loads(files["results.json"])
    assert summary["dataset"] == {"id": "me/eccv-caption", "revision": FAKE_COMMIT} and "/home/me" not in done.stdout


def test_details_then_numbers_pointing_at_them(hub, results, run):
    """The default: the details to the user's own dataset repo (made), the numbers in a pull request; each
    source.url resolves to the details commit, whose Parquet files hold exactly the per-query values."""
    numbers, per_query = run
    done = cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]))
    assert done.returncode == 0, done.stderr
    details, model = hub.store.commits
    assert ("datasets", "me/details_me__clip") in hub.store.created
    assert (details["repo"], details["revision"], details["create_pr"]) == ("me/details_me__clip", "main", False)
    assert (model["repo"], model["create_pr"], model["pr"], model["parent"]) == ("me/clip", True, 1, FAKE_COMMIT)
    assert done.stdout.rstrip().endswith(f"opened pull request {hub.url}/me/clip/discussions/1 (model me/clip)")
    published = entries(model["files"])
    assert len(published) == 12
    for key, item in published.items():
        metric, direction = key.split(":")[1].rsplit("_", 1)
        assert item["value"] == percent(numbers[metric][direction])
        assert item["source"]["url"] == f"{hub.url}/datasets/me/details_me__clip/tree/{details['sha']}"
        ids, values = parquet_rows(
            resolve(hub, item["source"]["url"], f"data/{metric}_{direction}/test-00000-of-00001.parquet")
        )
        assert ids == per_query[metric][direction]["query_ids"] and values == per_query[metric][direction]["values"]
    card = resolve(hub, item["source"]["url"], "README.md").decode()
    assert 'load_dataset("me/details_me__clip", "' in card and "configs:" in card
    summary = json.loads(resolve(hub, item["source"]["url"], "results.json"))
    assert summary["results"] == numbers and summary["model_repo"] == "me/clip"
    assert "/home/me" not in json.dumps(summary)  # the provenance's local paths are not published
    assert "Per-query values behind every number" in model["description"]
    # the card's snippet as a reader runs it: datasets' own load_dataset, at the commit the numbers point at
    code = (
        "import json, sys, numpy as np; from datasets import load_dataset; "
        f"d = load_dataset('me/details_me__clip', 'eccv_map_at_r_t2i', split='test', revision='{details['sha']}'); "
        "print(json.dumps([list(d['query_id']), float(np.mean(d['value']))]))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=hub.env, timeout=300)
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    ids, mean = json.loads(loaded.stdout.strip().splitlines()[-1])
    assert ids == per_query["eccv_map_at_r"]["t2i"]["query_ids"] and mean == numbers["eccv_map_at_r"]["t2i"]


def test_a_rerun_adds_a_commit_to_the_same_pull_request(hub, results, run, tmp_path):
    """One submission per model, kept current: the user's open pull request is found and committed to."""
    assert (
        cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), token="hf_other").returncode == 0
    )
    again = cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), token="hf_other")
    assert again.returncode == 0, again.stderr
    assert "nothing changed on model me/clip" in again.stdout and len(hub.store.commits) == 2  # no empty commit
    later = write_run(tmp_path / "later", run, date="2026-09-01T08:00:00Z")  # a newer run of the same model
    done = cli(hub.env, "push-results", str(later[0]), "--per-query", str(later[1]), token="hf_other")
    assert done.returncode == 0, done.stderr
    assert [(c["repo"], c["pr"], c["create_pr"]) for c in hub.store.commits] == [
        ("other/details_me__clip", None, False),
        ("me/clip", 1, True),
        ("other/details_me__clip", None, False),
        ("me/clip", 1, False),  # a commit to refs/pr/1, not a second pull request
    ]
    assert hub.store.commits[-1]["revision"] == "refs/pr/1"
    assert "added commit" in done.stdout and "to your pull request #1 on model me/clip" in done.stdout
    (pr,) = hub.store.prs[("models", "me/clip")]
    dates = {item["date"] for item in entries(pr.files).values()}
    assert dates == {"2026-09-01T08:00:00Z"}
    mine = cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), token="hf_me")
    assert mine.returncode == 0 and len(hub.store.prs[("models", "me/clip")]) == 2  # another user: their own
    # details to a repo of another account: a pull request there too, kept current the same way
    theirs = [str(later[0]), "--per-query", str(later[1]), "--details-repo", "me/details_me__clip"]
    done = cli(hub.env, "push-results", *theirs, token="hf_other")
    assert done.returncode == 0 and "open a pull request on dataset me/details_me__clip" in done.stdout, done.stderr
    commits = len(hub.store.commits)
    again = cli(hub.env, "push-results", *theirs, token="hf_other")
    assert "add a commit to your pull request #1 on dataset me/details_me__clip" in again.stdout, again.stderr
    assert len(hub.store.commits) == commits  # the same files: no commit on either repo
    (details_pr,) = hub.store.prs[("datasets", "me/details_me__clip")]
    assert details_pr.author == "other"
    sources = {item["source"]["url"] for item in entries(hub.store.prs[("models", "me/clip")][0].files).values()}
    assert sources == {f"{hub.url}/datasets/me/details_me__clip/tree/{details_pr.sha}"}


def test_direct_with_model_index_keeps_the_card(hub, results, run):
    numbers = run[0]
    done = cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), "--direct", "--model-index")
    assert done.returncode == 0, done.stderr
    commit = hub.store.commits[-1]
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
        p.split("/")[1] for p in commit["files"] if p != "README.md"
    )


def test_two_benchmarks_on_one_model_repo_keep_their_own_files(hub, results, tmp_path, run):
    """Issue 53: results for me/eccv-caption then other/eccv-caption overwrote all 12 files of the first."""
    fork = write_run(tmp_path / "fork", run, data="other/eccv-caption")
    for res, pq in (results, fork):
        done = cli(hub.env, "push-results", str(res), "--per-query", str(pq), "--direct", "--details-repo",
                   f"me/details-{res.parent.name}")  # fmt: skip
        assert done.returncode == 0, done.stderr
    files = {p.relative_to(hub.model).as_posix(): p.read_bytes() for p in (hub.model / ".eval_results").iterdir()}
    published = entries(files)
    assert len(files) == 24 and {k.split(":")[0] for k in published} == {"me/eccv-caption", "other/eccv-caption"}
    board = cli(hub.env, "leaderboard", "--from-hub", "me/eccv-caption", token=None)
    assert board.returncode == 0 and "\nme/clip " in board.stdout, board.stderr


def commits_of(dry_run: str) -> dict[str, dict[str, list[str]]]:
    """``{repo: {"sent": [...], "deleted": [...]}}`` of the commits a dry run prints (its ``would ...`` lines and
    the ``  add`` / ``  replace`` / ``  delete`` lines under each); a repo it would not change: empty lists."""
    out: dict[str, dict[str, list[str]]] = {}
    repo = None
    for line in dry_run.splitlines():
        if line.startswith("would "):
            repo = re.search(r"\b(?:model|dataset) ([\w.-]+/[\w.-]+)", line)[1]  # type: ignore[index]
            out[repo] = {"sent": [], "deleted": []}
        elif repo and line.startswith(("  add ", "  replace ", "  delete ")):
            how, path = line.split()[:2]
            out[repo]["deleted" if how == "delete" else "sent"].append(path)
    return {repo: {k: sorted(paths) for k, paths in lists.items()} for repo, lists in out.items()}


def test_the_dry_run_is_the_commit(here, run, tmp_path, capsys):
    """Issue 61: the dry run printed "one commit of 8 files" where the push sent 2 (6 tasks not in eval.yaml),
    and never showed deletions, the allow-list note or a reused pull request. Now it asks the Hub what the push
    asks, and its lists are the commits' (the fake Hub records them): here a new pull request that deletes a stale
    file of this package's (a task eval.yaml no longer lists), keeps a file of another name, drops a task, with the
    allow-list note; then a rerun that changes nothing."""
    numbers, per_query = run
    folder = here.model / ".eval_results"
    folder.mkdir()
    stale = {"dataset": {"id": "me/eccv-caption", "task_id": "pmrp_t2i"}, "value": 10.0}
    (folder / "me--eccv-caption--pmrp_t2i.yaml").write_text(yaml.safe_dump([stale]))
    legacy = {"dataset": {"id": "me/eccv-caption", "task_id": "eccv_r1_i2t"}, "value": 1.0}
    (folder / "eccv-caption_eccv_r1_i2t.yaml").write_text(yaml.safe_dump([legacy]))
    here.store.allow_listed.discard("me/eccv-caption")
    pmrp = {"pmrp": {"i2t": per_query["eccv_r1"]["i2t"]}}  # a task this build's eval.yaml does not list
    extra = ({**numbers, "pmrp": {"i2t": numbers["eccv_r1"]["i2t"]}}, {**per_query, **pmrp})
    res, pq = write_run(tmp_path / "run", extra)
    args = ["push-results", str(res), "--per-query", str(pq)]
    assert main([*args, "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert here.store.commits == [] and here.store.created == []
    assert main(args) == 0
    pushed = capsys.readouterr().out
    details, model = here.store.commits
    printed = commits_of(dry)
    assert printed == {
        "me/details_me__clip": {"sent": sorted(details["files"]), "deleted": details["deleted"]},
        "me/clip": {"sent": sorted(model["files"]), "deleted": model["deleted"]},
    }
    assert printed["me/clip"]["deleted"] == [".eval_results/me--eccv-caption--pmrp_t2i.yaml"]
    assert ".eval_results/eccv-caption_eccv_r1_i2t.yaml" in model["tree"]  # not a file push-results wrote: kept
    assert "would open a pull request on model me/clip, one commit: 12 added, 1 deleted" in dry
    for said in (
        "not published (the eval.yaml of me/eccv-caption does not list them): pmrp_i2t",
        "note: me/eccv-caption is not on the Hub's benchmark allow-list",
        "note: .eval_results/eccv-caption_eccv_r1_i2t.yaml on model me/clip also holds entries for "
        "me/eccv-caption's tasks published now: it stays",
    ):
        assert said in dry and said in pushed, said
    assert main([*args, "--dry-run"]) == 0  # the same run again: your pull request, nothing to change
    again = capsys.readouterr().out
    assert "would change nothing on dataset me/details_me__clip: its files are already these (no commit)" in again
    assert "would change nothing on model me/clip: its files are already these (no commit)" in again
    assert commits_of(again) == {"me/details_me__clip": {"sent": [], "deleted": []},
                                 "me/clip": {"sent": [], "deleted": []}}  # fmt: skip
    later, later_pq = write_run(tmp_path / "later", extra, date="2026-09-01T08:00:00Z")
    assert main(["push-results", str(later), "--per-query", str(later_pq), "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "would add a commit to your pull request #1 on model me/clip, one commit: 12 replaced" in dry
    assert main(["push-results", str(later), "--per-query", str(later_pq)]) == 0
    capsys.readouterr()
    details, model = here.store.commits[2:]
    assert commits_of(dry) == {
        "me/details_me__clip": {"sent": sorted(details["files"]), "deleted": []},
        "me/clip": {"sent": sorted(model["files"]), "deleted": []},
    }
    assert model["pr"] == 1 and set(details["files"]) == {"results.json", "README.md"}  # the date; Parquet the same


def test_a_push_never_deletes_a_file_it_did_not_write(here, run, tmp_path, capsys):
    """Issue 61: a pull request to another user's model deleted that owner's own file covering the same benchmark
    and tasks, printing only "1 replaced". Only this package's own files are ever deleted; theirs stays, named."""
    owner = add_model(here, "other/clip2") / ".eval_results"
    owner.mkdir()
    theirs = [
        {"dataset": {"id": "me/eccv-caption", "task_id": t}, "value": 30.0} for t in ("eccv_r1_i2t", "eccv_r1_t2i")
    ]
    (owner / "eccv.yaml").write_text(yaml.safe_dump(theirs))
    res, pq = write_run(tmp_path / "run", run, model="hf:other/clip2")
    assert main(["push-results", str(res), "--per-query", str(pq)]) == 0  # me opens a pull request on other's repo
    out = capsys.readouterr().out
    model = here.store.commits[-1]
    assert (model["repo"], model["create_pr"], model["deleted"]) == ("other/clip2", True, [])
    assert ".eval_results/eccv.yaml" in model["tree"] and "replaced" not in out
    assert "note: .eval_results/eccv.yaml on model other/clip2 also holds entries for me/eccv-caption's tasks " \
        "published now: it stays" in out  # fmt: skip


def test_a_folder_of_results_goes_each_file_to_its_model(here, run, tmp_path, capsys):
    folder = tmp_path / "out"
    for k, name in enumerate(("clip-a", "clip-b")):
        add_model(here, f"me/{name}")
        write_run(folder, run, name=f"{k}-hf_me_{name}", model=f"hf:me/{name}")
        (folder / f"{k}-hf_me_{name}_pq.json").unlink()
    assert main(["push-results", str(folder), "--no-details", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would open a pull request on model me/clip-a, one commit: 12 added" in out
    assert "would open a pull request on model me/clip-b, one commit: 12 added" in out
    assert f"{folder / '0-hf_me_clip-a.json'}:\n" in out and here.store.commits == []


def test_a_local_build_publishes_the_revision_of_the_same_files(hub, bench, tmp_path, run):
    """dataset.revision where the build is the pushed one: the build the run read (its digests recorded, still
    its files) holds the Hub repo's files, byte for byte; one line when it changed since or differs."""
    import hashlib
    import shutil

    digests = {p.relative_to(bench).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
               for p in sorted(bench.glob("data/*/*.parquet"))}  # fmt: skip
    first = sorted(digests)[0]
    read = {first: digests[first]}  # what the run read
    local = write_run(tmp_path / "local", run, data=str(bench), data_revision=None, data_files=read)
    done = cli(hub.env, "push-results", str(local[0]), "--no-details", "--direct", "--dataset-repo", "me/eccv-caption")
    assert done.returncode == 0, done.stderr
    assert {item["dataset"]["revision"] for item in entries(hub.store.commits[-1]["files"]).values()} == {FAKE_COMMIT}
    commits = len(hub.store.commits)
    changed = write_run(tmp_path / "changed", run, data=str(bench), data_revision=None, data_files={first: "0" * 64})
    one_line(
        cli(hub.env, "push-results", str(changed[0]), "--no-details", "--dataset-repo", "me/eccv-caption"),
        f"{changed[0]}: the build {bench} changed since the run ({first} is no longer the file it read)",
        "evaluate again on it, then run push-results again",
    )
    older = tmp_path / "older"  # the repo holds another version of the build
    shutil.copytree(bench, older)
    (older / first).write_bytes((older / first).read_bytes() + b"\0")
    hub.store.repos[("datasets", "me/eccv-older")] = older
    one_line(
        cli(hub.env, "push-results", str(local[0]), "--no-details", "--dataset-repo", "me/eccv-older"),
        f"{local[0]} was scored on a local build whose files are not those of me/eccv-older ({first} differs; 1 of "
        f"{len(digests)} differ)",
        "or evaluate on --data me/eccv-older, then run push-results again",
    )
    assert len(hub.store.commits) == commits
    gone = write_run(tmp_path / "gone", run, data=str(tmp_path / "moved"), data_revision=None, data_files=read)
    done = cli(hub.env, "push-results", str(gone[0]), "--no-details", "--direct", "--dataset-repo", "me/eccv-caption")
    assert done.returncode == 0 and "note: no dataset.revision: the local build the run read" in done.stdout


def test_a_dataset_not_on_the_allow_list_is_said(hub, results):
    hub.store.allow_listed.discard("me/eccv-caption")
    done = cli(hub.env, "push-results", str(results[0]), "--no-details")
    assert done.returncode == 0, done.stderr
    assert "note: me/eccv-caption is not on the Hub's benchmark allow-list (no benchmark:official tag): the " \
        "results show on the model page and on no leaderboard until the Hub lists it" in done.stdout  # fmt: skip


def test_failures_are_one_line_naming_the_repo_and_the_next_step(hub, results, tmp_path):
    res, pq = (str(p) for p in results)
    one_line(
        cli(hub.env, "push-results", res, "--per-query", pq, token=None),
        "push-results to model me/clip: no Hugging Face token; log in with `hf auth login` or set HF_TOKEN",
        "then run push-results again",
    )
    assert hub.log == []
    one_line(
        cli(hub.env, "push-results", res, "--per-query", pq, "--model-repo", "me/nothing", "--other-model"),
        "push-results to model me/nothing failed: the model repo me/nothing was not found on the Hub",
        "check --model-repo (`hf repo create me/nothing` makes it, if it is yours), then run push-results again",
    )
    one_line(  # a model repo the user cannot write: said before anything is sent
        cli(hub.env, "push-results", res, "--per-query", pq, "--direct", token="hf_other"),
        "push-results to model me/clip: other may not commit to main of model me/clip (another account's repo): "
        "drop --direct to open a pull request instead",
        "then run push-results again",
    )
    one_line(
        cli(hub.env, "push-results", res, "--per-query", pq, token="hf_read"),
        "push-results to model me/clip: the token of me is read-only",
        "then run push-results again",
    )
    one_line(
        cli(hub.env, "push-results", res, "--per-query", pq, "--details-repo", "other/details"),
        "push-results details to dataset other/details: the dataset other/details does not exist and me may not "
        "create it",
        "give a repo of yours, then run push-results again",
    )
    local = json.loads(results[0].read_text())
    local["provenance"].update(data="/data/build", data_revision=None)
    (tmp_path / "local.json").write_text(json.dumps(sealed(local)))
    one_line(
        cli(hub.env, "push-results", str(tmp_path / "local.json"), "--no-details", "--dataset-repo", "me/plain"),
        "push-results to model me/clip failed: the dataset me/plain has no eval.yaml, so it registers no tasks",
        "(`eccv-caption push --dataset-dir FOLDER --dataset-repo me/plain`), then run push-results again",
    )
    assert hub.store.commits == [] and hub.store.created == [] and (hub.model / "README.md").read_text() == CARD
    with socket.socket() as sock:  # a port nothing listens on: connections are refused at once
        sock.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{sock.getsockname()[1]}"
    one_line(
        cli(hub.env | {"HF_ENDPOINT": closed}, "push-results", res, "--per-query", pq),
        f"push-results to model me/clip failed: could not reach the Hub at {closed} (",
        "check the network connection (and HF_ENDPOINT, HF_HUB_OFFLINE), then run push-results again",
    )


def test_a_card_with_broken_yaml_is_one_line_and_nothing_is_sent(hub, results):
    """Issue 53: --direct --model-index on a card with broken YAML front matter ended in yaml.parser.ParserError."""
    (hub.model / "README.md").write_text("---\nlicense: mit\ntags: [clip\n---\n# x\n")
    one_line(
        cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), "--direct", "--model-index"),
        "the model card README.md of me/clip has YAML metadata huggingface_hub cannot read (ParserError: ",
        "fix the YAML between its '---' lines, or drop --model-index to publish the eval results alone",
    )
    assert hub.store.commits == [] and hub.store.created == []


def test_a_refusal_by_the_hub_is_one_line_and_leaves_nothing_half_written(hub, results):
    res, pq = (str(p) for p in results)
    hub.store.refuse["README.md"] = "Invalid metadata in README.md: a rule this client cannot know"
    one_line(  # the details commit refused: nothing anywhere
        cli(hub.env, "push-results", res, "--per-query", pq),
        "push-results to model me/clip failed: the Hub answered 400: Invalid metadata in README.md",
        "then run push-results again",
    )
    assert hub.store.commits == []
    made = ("datasets", "me/details_me__clip")  # the details repo made for the refused commit: deleted again
    assert hub.store.created == [made] and hub.store.deleted == [made] and made not in hub.store.repos
    hub.store.refuse = {".eval_results/me--eccv-caption--eccv_r1_t2i.yaml": "Invalid input: a rule unknown here"}
    done = cli(hub.env, "push-results", res, "--per-query", pq)
    start = "push-results to model me/clip failed: the Hub answered 400: Invalid input: a rule unknown here"
    assert (
        f"then run push-results again (the details commit {hub.url}/datasets/me/details_me__clip/tree/" in done.stderr
    )
    one_line(done, start, "stays and is reused)")
    assert [c["repo"] for c in hub.store.commits] == ["me/details_me__clip"]  # evidence without numbers: no number
    hub.store.refuse = {}
    again = cli(hub.env, "push-results", res, "--per-query", pq)
    assert again.returncode == 0 and "nothing changed on dataset me/details_me__clip" in again.stdout, again.stderr


def test_a_details_repo_holding_other_files_is_not_overwritten(hub, results, bench, tmp_path):
    """--details-repo naming a repo of the user's that holds no details (here the benchmark itself) was committed
    to on main, its card replaced; it is one line and nothing is sent. An empty repo is taken."""
    res, pq = (str(p) for p in results)
    card = (bench / "README.md").read_bytes()
    done = cli(hub.env, "push-results", res, "--per-query", pq, "--details-repo", "me/eccv-caption")
    one_line(done, "push-results to model me/clip: the details repo me/eccv-caption holds files that are no details (",
             "give --details-repo a new or empty repo, then run push-results again")  # fmt: skip
    assert hub.store.commits == [] and (bench / "README.md").read_bytes() == card
    empty = hub.store.repos[("datasets", "me/empty")] = tmp_path / "empty"
    empty.mkdir()
    (empty / ".gitattributes").write_text("*.parquet filter=lfs diff=lfs merge=lfs -text\n")
    done = cli(hub.env, "push-results", res, "--per-query", pq, "--details-repo", "me/empty")
    assert done.returncode == 0 and hub.store.commits[0]["repo"] == "me/empty", done.stderr


def test_bad_inputs_send_nothing(hub, results, run, tmp_path):
    numbers, per_query = run
    scores = tmp_path / "scores.json"  # what `evaluate --demo -o` (from scores, no model) writes
    scores.write_text(json.dumps({**numbers, "provenance": {"date": "2026-08-25T10:30:00Z", "input": "scores"}}))
    other = write_run(tmp_path / "other", ({**numbers}, {**per_query, "eccv_r1": {
        d: {**e, "values": e["values"][::-1]} for d, e in per_query["eccv_r1"].items()}}))  # fmt: skip
    edited = json.loads(results[0].read_text())
    edited["eccv_r1"]["i2t"] = 0.99
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    add_model(hub, "me/clip2")
    for args, words in (
        ([str(scores), "--no-details"], "its provenance names no model (results scored from --scores"),
        ([str(results[0])], "give --per-query (the file of `evaluate --per-query` in the same run), or --no-details"),
        ([str(results[0]), "--no-details", "--details-repo", "me/d"], "--details-repo names where the per-query"),
        ([str(results[0]), "--per-query", str(other[1])], "holds the per-query values of another run than"),
        ([str(tmp_path / "edited.json"), "--no-details"], "was changed after the run: its numbers no longer match"),
        ([str(results[0]), "--model-repo", "clip", "--no-details"], "--model-repo 'clip' is not a Hub repo id"),
    ):
        done = cli(hub.env, "push-results", *args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert hub.log == [] and hub.store.commits == []
    # details of another model: the details repo holds me/clip's, the results are me/clip2's
    assert cli(hub.env, "push-results", str(results[0]), "--per-query", str(results[1]), "--direct").returncode == 0
    clip2 = write_run(tmp_path / "clip2", run, model="hf:me/clip2")
    one_line(
        cli(
            hub.env,
            "push-results",
            str(clip2[0]),
            "--per-query",
            str(clip2[1]),
            "--details-repo",
            "me/details_me__clip",
        ),  # fmt: skip
        "push-results to model me/clip2: the details repo me/details_me__clip holds the details of me/clip on "
        "me/eccv-caption, not of me/clip2 on me/eccv-caption",
        "give --details-repo another repo, then run push-results again",
    )
