"""The fake Hub refuses what the real Hub refuses: each rule with huggingface_hub's own client, in this process.

Each of these failed against the fake before it knew the rule (it took any eval.yaml and .eval_results file, gave
every dataset a leaderboard of its first task, ignored base_model_only, kept no author on pull requests and had
no route to list them): a test of push-results that passes here passes for the Hub's reasons.
"""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml
from huggingface_hub import CommitOperationAdd
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError
from huggingface_hub.utils import get_session

from tests.integration import hub_world
from tests.integration.hub_world import add_model

bench, hub = hub_world.bench, hub_world.hub  # the fixtures
ENTRY = {"dataset": {"id": "me/eccv-caption", "task_id": "eccv_map_at_r_i2t"}, "value": 32.5,
         "source": {"url": "https://huggingface.co/datasets/me/details", "name": "details"}}  # fmt: skip


@pytest.fixture(autouse=True)
def _no_xet(monkeypatch):
    """The clients here upload large files through LFS, as :meth:`FakeHub.client_env` has a subprocess do (the fake
    Hub speaks the LFS batch API, not Xet)."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)


def api(hub, token: str = "hf_me") -> HfApi:
    return HfApi(endpoint=hub.url, token=token)


def add(path: str, payload: object) -> CommitOperationAdd:
    data = payload if isinstance(payload, bytes) else yaml.safe_dump(payload).encode()
    return CommitOperationAdd(path_in_repo=path, path_or_fileobj=data)


def refused(call, status: int, words: str) -> None:
    with pytest.raises(HfHubHTTPError) as err:
        call()
    assert err.value.response.status_code == status and words in (err.value.server_message or str(err.value))


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda e: e["source"].update(url=None), "Invalid input: expected string, received null\n  → at [0].source"),
        (lambda e: e["dataset"].pop("task_id"), "expected string, received null\n  → at [0].dataset.task_id"),
        (lambda e: e.update(value="32.5"), "expected number, received string\n  → at [0].value"),
        (lambda e: e.update(value=float("nan")), "expected number, received nan\n  → at [0].value"),
        (lambda e: e.update(date=20260825), "expected string, received number\n  → at [0].date"),
        (
            lambda e: e["dataset"].update(task_id="pmrp_i2t"),
            "Invalid task_id 'pmrp_i2t': not a task of me/eccv-caption",
        ),
    ],
)
def test_an_invalid_eval_results_file_is_taken_and_reported_when_read(hub, change, words):
    """As the Hub does (huggingface_hub PR #4924): the commit is taken; the model's evalResults serve the file as
    ``{"filename", "error"}`` beside the valid entries; huggingface_hub's own parse skips it and keeps the others;
    the leaderboard leaves it out."""
    entry = yaml.safe_load(yaml.safe_dump(ENTRY))
    change(entry)
    ops = [add(".eval_results/bad.yaml", [entry]), add(".eval_results/x.yaml", [ENTRY])]
    api(hub).create_commit("me/clip", ops, commit_message="x")
    assert len(hub.store.commits) == 1
    answer = get_session().get(f"{hub.url}/api/models/me/clip", params={"expand": ["evalResults"]})
    bad, good = answer.json()["evalResults"]
    assert bad == {"filename": ".eval_results/bad.yaml", "error": bad["error"]} and bad["error"].startswith("✖ ")
    assert words in bad["error"]
    assert good == {"filename": ".eval_results/x.yaml", "verified": False, "data": ENTRY, "pullRequest": None}
    (parsed,) = api(hub).model_info("me/clip", expand=["evalResults"]).eval_results  # huggingface_hub 2.5's parse
    assert (parsed.dataset_id, parsed.task_id, parsed.value) == ("me/eccv-caption", "eccv_map_at_r_i2t", 32.5)
    board = api(hub).get_dataset_leaderboard("me/eccv-caption")
    assert [entry.filename for entry in board] == [".eval_results/x.yaml"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda y: y.pop("evaluation_framework"), "expected string, received null at evaluation_framework"),
        (lambda y: y.update(evaluation_framework="eccv-caption"), "'eccv-caption' is not a supported framework"),
        (lambda y: y.update(tasks=[]), "expected a non-empty array"),
        (lambda y: y["tasks"].append(dict(y["tasks"][0])), "Duplicate task id 'eccv_map_at_r_i2t'"),
    ],
)
def test_an_eval_yaml_the_spec_refuses_is_a_400(hub, bench, change, words):
    data = yaml.safe_load((bench / "eval.yaml").read_text())
    api(hub).create_repo("me/bench", repo_type="dataset")
    ok = lambda d: api(hub).create_commit("me/bench", [add("eval.yaml", d)], repo_type="dataset", commit_message="x")  # noqa: E731
    change(data)
    refused(lambda: ok(data), 400, words)
    ok(yaml.safe_load((bench / "eval.yaml").read_text()))  # the build's own: accepted


def test_only_an_allow_listed_benchmark_has_a_leaderboard_of_its_first_task(hub):
    client = api(hub)
    for task, value in (("eccv_map_at_r_i2t", 30.0), ("eccv_r1_t2i", 40.0)):
        entry = {**ENTRY, "dataset": {"id": "me/eccv-caption", "task_id": task}, "value": value}
        client.create_commit("me/clip", [add(f".eval_results/{task}.yaml", [entry])], commit_message="x")
    assert "benchmark:official" in client.dataset_info("me/eccv-caption").tags
    (first,) = client.get_dataset_leaderboard("me/eccv-caption", base_model_only=False)  # the first task
    assert (first.rank, first.model_id, first.value, first.filename) == (
        1,
        "me/clip",
        30.0,
        ".eval_results/eccv_map_at_r_i2t.yaml",
    )
    assert first.verified is False and first.pull_request is None and first.source["url"] == ENTRY["source"]["url"]
    # no document names a task parameter: the fake takes none (a client relying on one would fail here)
    answer = get_session().get(f"{hub.url}/api/datasets/me/eccv-caption/leaderboard", params={"task_id": "eccv_r1_t2i"})
    assert answer.status_code == 400 and "task_id" in answer.text
    hub.store.allow_listed.discard("me/eccv-caption")
    assert client.dataset_info("me/eccv-caption").tags == []
    refused(lambda: client.get_dataset_leaderboard("me/eccv-caption"), 404, "has no leaderboard")


def test_the_leaderboard_leaves_out_models_with_a_base_model_by_default(hub):
    add_model(hub, "other/clip-ft", "---\nbase_model: me/clip\n---\n# fine-tuned\n")
    api(hub, "hf_other").create_commit("other/clip-ft", [add(".eval_results/x.yaml", [ENTRY])], commit_message="x")
    assert api(hub).get_dataset_leaderboard("me/eccv-caption") == []
    (entry,) = api(hub).get_dataset_leaderboard("me/eccv-caption", base_model_only=False)
    assert entry.model_id == "other/clip-ft"


def test_pull_requests_belong_to_their_author(hub):
    other = api(hub, "hf_other")
    info = other.create_commit("me/clip", [add(".eval_results/x.yaml", [ENTRY])], commit_message="Mine", create_pr=True)
    assert info.pr_num == 1
    (pr,) = other.get_repo_discussions(
        "me/clip", author="other", discussion_type="pull_request", discussion_status="open"
    )
    assert (pr.num, pr.title, pr.author, pr.status) == (1, "Mine", "other", "open")
    assert list(api(hub).get_repo_discussions("me/clip", author="me")) == []
    head = other.repo_info("me/clip", revision="refs/pr/1").sha
    again = {**ENTRY, "value": 33.0}
    other.create_commit("me/clip", [add(".eval_results/x.yaml", [again])], commit_message="again",
                        revision="refs/pr/1", parent_commit=head)  # fmt: skip
    assert yaml.safe_load(hub.store.prs[("models", "me/clip")][0].files[".eval_results/x.yaml"])[0]["value"] == 33.0
    add_model(hub, "third/model")
    hub.store.tokens["hf_third"] = ("third", True)
    commit = lambda: api(hub, "hf_third").create_commit("me/clip", [add("x.txt", b"x")], commit_message="x",  # noqa: E731
                                                         revision="refs/pr/1")  # fmt: skip
    refused(commit, 403, "Only the author of pull request #1 or me may commit to it")
    stale = lambda: other.create_commit("me/clip", [add("y.txt", b"y")], commit_message="y", revision="refs/pr/1",  # noqa: E731
                                        parent_commit=head)  # fmt: skip
    refused(stale, 412, "since the parent commit")


def test_an_unchanged_file_is_no_commit_and_parquet_goes_through_lfs(hub):
    """A Parquet file as the client sends a large file: the LFS batch API, a PUT of its bytes, the verify call, then
    an ``lfsFile`` item naming its sha256; sent as a regular file it is refused, as is a pointer to no object."""
    client = api(hub)
    client.create_repo("me/d", repo_type="dataset")
    refused(lambda: api(hub, "hf_other").create_repo("me/e", repo_type="dataset"), 403, "rights to create a repo")
    ops = lambda: [add("data/x.parquet", b"PAR1 data"), add("notes.txt", b"n")]  # noqa: E731
    client.create_commit("me/d", ops(), repo_type="dataset", commit_message="one")
    digest = hashlib.sha256(b"PAR1 data").hexdigest()
    sent = [(method, path.split("?")[0]) for method, path, _ in hub.log]
    lfs = [("POST", "/datasets/me/d.git/info/lfs/objects/batch"), ("PUT", f"/fake-lfs/{digest}"),
           ("POST", f"/fake-lfs/{digest}/verify")]  # fmt: skip
    assert sent[-4:] == [*lfs, ("POST", "/api/datasets/me/d/commit/main")]
    assert hub.store.commits[0]["lfs"] == ["data/x.parquet"] and hub.store.commits[0]["files"]["data/x.parquet"]
    again = client.create_commit("me/d", ops(), repo_type="dataset", commit_message="two")  # nothing changed
    assert len(hub.store.commits) == 1 and again.oid == hub.store.commits[0]["sha"]
    assert client.hf_hub_download("me/d", "data/x.parquet", repo_type="dataset", cache_dir=hub.model.parent / "c")
    siblings = {s.rfilename: s for s in client.dataset_info("me/d", files_metadata=True).siblings}
    assert siblings["data/x.parquet"].lfs.sha256 == digest
    url = f"{hub.url}/api/datasets/me/d/commit/main"
    pointer = {"path": "z.npy", "algo": "sha256", "oid": "0" * 64, "size": 1}  # an object never uploaded
    for item in ({"key": "file", "value": {"path": "y.npy", "content": "eA==", "encoding": "base64"}},
                 {"key": "lfsFile", "value": pointer}):  # fmt: skip
        lines = [{"key": "header", "value": {"summary": "raw"}}, item]
        answer = get_session().post(url, content="\n".join(json.dumps(line) for line in lines),
                                    headers={"Authorization": "Bearer hf_me"})  # fmt: skip
        assert answer.status_code == 400 and "Your push was rejected because" in answer.text, answer.text
    assert siblings["notes.txt"].lfs is None and client.whoami()["name"] == "me"
    assert client.whoami()["auth"]["accessToken"]["role"] == "write"
    assert api(hub, "hf_read").whoami()["auth"]["accessToken"]["role"] == "read"
