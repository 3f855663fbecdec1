"""The fake Hub refuses what the real Hub refuses: each rule with huggingface_hub's own client, in this process.

Each of these failed against the fake before it knew the rule (it took any eval.yaml and .eval_results file, gave
every dataset a leaderboard of its first task, ignored base_model_only, kept no author on pull requests and had
no route to list them): a test of push-results that passes here passes for the Hub's reasons.
"""

from __future__ import annotations

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
        (lambda e: e["source"].update(url=None), "Invalid input: expected string, received null at [0].source.url"),
        (lambda e: e["dataset"].pop("task_id"), "expected string, received null at [0].dataset.task_id"),
        (lambda e: e.update(value="32.5"), "expected number, received string at [0].value"),
        (lambda e: e.update(value=float("nan")), "expected number, received nan at [0].value"),
        (lambda e: e.update(date=20260825), "expected string, received number at [0].date"),
        (
            lambda e: e["dataset"].update(task_id="pmrp_i2t"),
            "Invalid task_id 'pmrp_i2t': not a task of me/eccv-caption",
        ),
    ],
)
def test_an_eval_results_file_the_spec_refuses_is_a_400(hub, change, words):
    entry = yaml.safe_load(yaml.safe_dump(ENTRY))
    change(entry)
    commit = lambda: api(hub).create_commit("me/clip", [add(".eval_results/x.yaml", [entry])], commit_message="x")  # noqa: E731
    refused(commit, 400, words)
    assert hub.store.commits == []
    api(hub).create_commit("me/clip", [add(".eval_results/x.yaml", [ENTRY])], commit_message="x")  # the valid one
    assert len(hub.store.commits) == 1


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


def test_only_an_allow_listed_benchmark_has_leaderboards_one_per_task(hub):
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
    answer = get_session().get(f"{hub.url}/api/datasets/me/eccv-caption/leaderboard", params={"task_id": "eccv_r1_t2i"})
    assert [(r["modelId"], r["value"]) for r in answer.json()] == [("me/clip", 40.0)]
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


def test_an_unchanged_file_is_no_commit_and_parquet_carries_its_sha256(hub):
    client = api(hub)
    client.create_repo("me/d", repo_type="dataset")
    refused(lambda: api(hub, "hf_other").create_repo("me/e", repo_type="dataset"), 403, "rights to create a repo")
    ops = lambda: [add("data/x.parquet", b"PAR1 data"), add("notes.txt", b"n")]  # noqa: E731
    client.create_commit("me/d", ops(), repo_type="dataset", commit_message="one")
    again = client.create_commit("me/d", ops(), repo_type="dataset", commit_message="two")  # nothing changed
    assert len(hub.store.commits) == 1 and again.oid == hub.store.commits[0]["sha"]
    siblings = {s.rfilename: s for s in client.dataset_info("me/d", files_metadata=True).siblings}
    import hashlib

    assert siblings["data/x.parquet"].lfs.sha256 == hashlib.sha256(b"PAR1 data").hexdigest()
    assert siblings["notes.txt"].lfs is None and client.whoami()["name"] == "me"
    assert client.whoami()["auth"]["accessToken"]["role"] == "write"
    assert api(hub, "hf_read").whoami()["auth"]["accessToken"]["role"] == "read"
