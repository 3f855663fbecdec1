"""The per-query values behind a model's published numbers, as a Hub dataset repo (its "details").

As lighteval and lm-evaluation-harness publish theirs (a dataset repo beside the results, one config per task,
``load_dataset(repo, config)``), one repo per model and benchmark dataset, by default
``<your account>/details_<model owner>__<model name>`` (lighteval's ``details_<org>__<model>``). Its files:

- ``data/<metric>_<direction>/test-00000-of-00001.parquet``: one config per metric and direction of the run's
  ``--per-query`` file (the published tasks' ids among them), columns ``query_id`` (int64) and ``value`` (float64);
  the config's aggregate of ``value`` (its mean; MedR: the median) is the number;
- ``results.json``: the numbers as the results file holds them (fractions), the run's provenance (local paths
  removed), the model repo, the benchmark dataset and its revision, each config's metric, direction and aggregate,
  and its ``seal``: the sha256 of the canonical JSON of every other field (:func:`seal_problem`). The run's own
  seal (``provenance.digests.provenance``) covers the provenance as the run wrote it, local paths included, so it
  cannot be checked from what is published; this one is, so that details edited after ``push-results`` (another
  model named, another repo) are told. Like every digest it catches an edit, not a forger, who can compute it
  again: what vouches for a number is its evidence scored again, and for the evidence ``verify --reencode``;
- ``evidence/``: what the engine scored (``evaluate --evidence``: :mod:`eccv_metric.evidence.layout`, its
  ``evidence.json`` and arrays, large files through the Hub's large-file storage), from which anyone recomputes every
  number (``eccv-caption verify --from-hub``);
- ``README.md``: the card: its YAML ``configs`` for ``datasets``, what was run and how to load it.

Each ``.eval_results`` entry's ``source.url`` is the commit of this repo that holds them
(``https://huggingface.co/datasets/<repo>/tree/<commit>``), so a number always points at its evidence.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import yaml

from eccv_metric.core.errors import EvaluationError
from eccv_metric.core.provenance import json_digest
from eccv_metric.core.provenance import scrub
from eccv_metric.hub.eval_tasks import NAME
from eccv_metric.hub.eval_tasks import shown
from eccv_metric.hub.repos import is_repo_id
from eccv_metric.hub.submission import Submission
from eccv_metric.hub.submission import suggested_repo

SPLIT = "test"
RESULTS_JSON = "results.json"
SEAL = "seal"  # results.json's digest of its other fields
PARQUET = "data/{config}/test-00000-of-00001.parquet"
TREE = re.compile(r"^(?P<endpoint>https?://[^/]+)/datasets/(?P<repo>[^/]+/[^/]+)/tree/(?P<sha>[0-9a-f]{40})/?$")


def default_repo(user: str, model_repo: str) -> str:
    """``<user>/details_<model owner>__<model name>`` (lighteval's naming); too long a name is one line."""
    owner, name = model_repo.split("/")
    repo = f"{user}/details_{owner}__{name}"
    if not is_repo_id(repo) or len(repo.split("/")[1]) > 96:
        raise EvaluationError(
            f"the details repo named after the model, {repo}, is not a Hub repo id (too long): give details_repo= "
            f"{user}/<name>"
        )
    return repo


def config_name(metric: str, direction: str) -> str:
    return f"{metric}_{direction}"


def tree_url(endpoint: str, repo: str, sha: str) -> str:
    """The URL of the details repo at a commit: what ``source.url`` holds."""
    return f"{endpoint.rstrip('/')}/datasets/{repo}/tree/{sha}"


def parse_tree_url(url: object) -> tuple[str, str] | None:
    """(details repo, commit) of a ``source.url`` this package wrote; None for any other URL."""
    match = TREE.match(url) if isinstance(url, str) else None
    return (match["repo"], match["sha"]) if match else None


def parquet_bytes(query_ids: list[int], values: list[float]) -> bytes:
    """A config's Parquet file: ``query_id`` int64 and ``value`` float64 (the same bytes for the same values)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {"query_id": pa.array(query_ids, pa.int64()), "value": pa.array(np.asarray(values, np.float64), pa.float64())}
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def details_files(sub: Submission) -> dict[str, bytes]:
    """``{path in the details repo: bytes}`` of a submission with per-query values (see the module docstring)."""
    if sub.per_query is None:
        raise EvaluationError(f"{sub.path}: no per-query values to publish as details")
    configs, files = {}, {}
    for metric, by_dir in sub.per_query.items():
        for direction, entry in by_dir.items():
            name = config_name(metric, direction)
            configs[name] = {"metric": metric, "direction": direction, "aggregate": entry.get("aggregate", "mean")}
            files[PARQUET.format(config=name)] = parquet_bytes(entry["query_ids"], entry["values"])
    summary = {
        "model_repo": sub.model_repo,
        "model": sub.public_spec,
        "dataset": {"id": sub.dataset_repo, "revision": sub.dataset_revision},
        "date": sub.date,
        "results": sub.means,
        "configs": configs,
        "provenance": scrub(sub.provenance),
    }
    summary[SEAL] = summary_digest(summary)
    text = json.dumps(summary, indent=1, sort_keys=False, allow_nan=False) + "\n"
    return {"README.md": card(sub, configs, repo="{repo}").encode(), RESULTS_JSON: text.encode(), **files}


EVIDENCE = "evidence"


def evidence_files(sub: Submission) -> dict[str, Path]:
    """``{path in the details repo: local file}`` of the run's evidence (``evidence/evidence.json`` and its arrays;
    {} without evidence)."""
    if sub.evidence is None:
        return {}
    folder = sub.evidence.folder
    names = ["evidence.json", *sub.evidence.manifest.get("files", {})]
    return {f"{EVIDENCE}/{name}": folder / name for name in names}


def card(sub: Submission, configs: dict[str, dict], repo: str) -> str:
    """The details repo's card: ``configs`` for ``datasets`` and how the numbers were made and are loaded."""
    meta = {
        "pretty_name": f"{NAME} per-query details of {sub.model_repo}",
        "tags": ["eccv-caption", "evaluation-details"],
        "configs": [
            {"config_name": name, "data_files": [{"split": SPLIT, "path": f"data/{name}/test-*.parquet"}]}
            for name in configs
        ],
    }
    rows = "\n".join(f"| `{task.id}` | {shown(task, value)} |" for task, value in sub.values)
    revision = f" at revision `{sub.dataset_revision}`" if sub.dataset_revision else ""
    first = next(iter(configs))
    return (
        "---\n"
        + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
        + f"""---

# {NAME} per-query details of [{sub.model_repo}](https://huggingface.co/{sub.model_repo})

The per-query values behind the model's published {NAME} numbers on
[`{sub.dataset_repo}`](https://huggingface.co/datasets/{sub.dataset_repo}){revision}: one config per metric and
direction, one row per query (`query_id`, `value`); each config's mean of `value` (MedR: the median) is the
number. Scored by {sub.producer} with {sub.package} (`{sub.public_spec}`), run {sub.date or "(date not recorded)"};
`results.json` holds the numbers and the run's provenance.

```python
from datasets import load_dataset

details = load_dataset("{repo}", "{first}", split="{SPLIT}")
```

Whether two models differ beyond chance, from their published details (paired test and confidence intervals):
`eccv-caption compare --from-hub {sub.model_repo} OTHER/MODEL --dataset-repo {sub.dataset_repo}`.
{evidence_words(sub)}
| task | value |
|---|---|
{rows}
"""
    )


def evidence_words(sub: Submission) -> str:
    """The card's paragraph on the evidence (or on its absence)."""
    if sub.evidence is None:
        return (
            "\nThese are per-query values only (the run kept no evidence): a number can be checked to be their mean.\n"
        )
    size = sub.evidence.bytes
    return (
        f"\n`evidence/` holds what the engine scored ({size:,} bytes: `evidence/evidence.json` lists each array), so "
        "anyone can recompute every number: `eccv-caption verify --from-hub "
        f"{sub.model_repo} --dataset-repo {sub.dataset_repo}`.\n"
    )


def with_repo(files: dict[str, bytes], repo: str) -> dict[str, bytes]:
    """The details files with the card's load snippet naming ``repo``."""
    return {**files, "README.md": files["README.md"].decode().replace("{repo}", repo).encode()}


def read_results_json(data: bytes, where: str) -> dict:
    """A details repo's ``results.json``, checked to be one (``where``: the repo and commit, for the error)."""
    try:
        out = json.loads(data)
    except ValueError:
        out = None
    if not isinstance(out, dict) or not all(isinstance(out.get(k), dict) for k in ("configs", "dataset")):
        raise EvaluationError(f"{where}: its {RESULTS_JSON} is not the one push-results writes")
    return out


def summary_digest(summary: dict) -> str:
    """The digest a ``results.json`` is sealed with: every field but :data:`SEAL`, as the file reads back."""
    return json_digest(json.loads(json.dumps({k: v for k, v in summary.items() if k != SEAL})))


def seal_problem(summary: dict, where: str) -> str | None:
    """Why a details commit's ``results.json`` does not vouch for the run it names (the model, the model repo, the
    benchmark and revision, the provenance, the numbers): no seal (written by push-results of an earlier
    eccv-caption-hf), or one that no longer matches (edited after push-results wrote it); None when it does."""
    seal = summary.get(SEAL)
    if not isinstance(seal, str):
        return (f"{where}'s {RESULTS_JSON} records no seal (published by an earlier eccv-caption-hf): the model and "
                "run it names are not vouched for; push the run again")  # fmt: skip
    if seal != summary_digest(summary):
        return (f"{where}'s {RESULTS_JSON} was changed after push-results wrote it (its seal no longer matches: the "
                "model, repo, run or numbers it names were edited)")  # fmt: skip
    return None


def run_model(summary: dict) -> str | None:
    """The model whose run a details commit holds: the Hub repo its provenance's model loads (``hf:ORG/MODEL``,
    ``mteb:ORG/MODEL``...), else the repo it was published for (``model_repo``: a local model names none); None
    when it names neither. Details published with ``--other-model`` are the run of the model that was run."""
    provenance = summary.get("provenance") if isinstance(summary.get("provenance"), dict) else {}
    spec = provenance.get("model")
    loaded = suggested_repo(spec) if isinstance(spec, str) else None
    named = summary.get("model_repo")
    return loaded or (named if isinstance(named, str) else None)


def per_query_from(summary: dict, parquet: dict[str, bytes], where: str) -> dict:
    """The per-query values ``{metric: {direction: {"query_ids", "values", "aggregate"}}}`` of a details commit
    (``parquet``: ``{config: bytes}``), as ``compare`` reads ``--per-query`` files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out: dict = {}
    for name, about in summary["configs"].items():
        if not isinstance(about, dict) or not all(isinstance(about.get(k), str) for k in ("metric", "direction")):
            raise EvaluationError(f"{where}: {RESULTS_JSON}'s config {name!r:.40} names no metric and direction")
        if name not in parquet:
            raise EvaluationError(f"{where}: {RESULTS_JSON} lists the config {name}, which has no Parquet file")
        try:
            table = pq.read_table(io.BytesIO(parquet[name]))
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise EvaluationError(f"{where}: {name}'s Parquet cannot be read ({type(exc).__name__})") from None
        types = [str(t) for t in table.schema.types]
        if table.column_names != ["query_id", "value"] or types != ["int64", "double"]:
            raise EvaluationError(f"{where}: {name}'s Parquet has columns {table.column_names} ({', '.join(types)}), "
                                  "not query_id (int64), value (double)")  # fmt: skip
        out.setdefault(about["metric"], {})[about["direction"]] = {
            "query_ids": table.column("query_id").to_pylist(),
            "values": table.column("value").to_pylist(),
            "aggregate": about.get("aggregate", "mean"),
        }
    return out
