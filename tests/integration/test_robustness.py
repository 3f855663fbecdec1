"""Randomized robustness: mutated inputs give a brute-force-equal number or an EvaluationError, nothing else.

The run happens in a child process under an address-space limit (so an
allocation driven by a user-given number fails the test instead of the
machine). Each trial mutates seeded top-50 rankings (truncations, duplicates,
aliased keys, wrong types, huge K, missing or unknown queries, cross-modal ids)
and scores them through the Python API or the CLI's JSON reader. The
reference is a separate pure-Python implementation over the wheel's JSON
files: it decides validity itself and computes R@K, mAP@R and R-Precision
from scratch. Both must agree on "refused" vs "scored", and on every number.
"""

from __future__ import annotations

import json
import math
import numbers
import random
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADDRESS_SPACE = 6 << 30
GALLERY = {"i2t": "caption", "t2i": "image"}
PREFIX = {"coco": "original", "cxc": "cxc", "eccv": "eccv"}
FILES = {"i2t": "image_to_caption", "t2i": "caption_to_image"}


class InvalidInputError(Exception):
    """The reference refuses the input."""


def load_reference() -> dict:
    from eccv_metric.groundtruth.split import wheel_data_dir

    data = wheel_data_dir()
    import numpy as np

    captions = [int(c) for c in np.load(data / "coco_test_ids.npy")]
    lists = {
        (bench, d): {int(k): set(v) for k, v in json.loads((data / f"{p}_{FILES[d]}.json").read_text()).items()}
        for bench, p in PREFIX.items()
        for d in ("i2t", "t2i")
    }
    images: list[int] = []
    for c in captions:
        (img,) = lists[("coco", "t2i")][c]
        if not images or images[-1] != img:
            images.append(img)
    assert len(set(images)) == 5000
    fold_caption = {c: i // 5000 for i, c in enumerate(captions)}
    fold_image = {next(iter(lists[("coco", "t2i")][c])): f for c, f in fold_caption.items()}
    return {
        "ids": {"image": images, "caption": captions},
        "sets": {"image": set(images), "caption": set(captions)},
        "fold": {"i2t": (fold_image, fold_caption), "t2i": (fold_caption, fold_image)},
        "lists": lists,
    }


def is_int(x: object) -> bool:
    if type(x) is int:  # the common case, without the ABC check below (half of this test's time)
        return True
    return isinstance(x, numbers.Integral) and not isinstance(x, bool) and type(x).__name__ != "bool_"


def reference_metrics(ref: dict, rankings: dict, targets: list[str], ks: object) -> dict:
    """Pure-Python metrics, or InvalidInputError."""
    if isinstance(ks, bool) or not (is_int(ks) or isinstance(ks, (list, tuple))):
        raise InvalidInputError("Ks")
    ks = [ks] if is_int(ks) else list(ks)
    if any(not is_int(k) or k < 1 for k in ks):
        raise InvalidInputError("Ks")
    wanted: list[tuple[str, str, int]] = []  # (name, kind, K)
    for t in targets:
        for bench in ("coco_1k", "coco_5k", "cxc", "eccv"):
            if t == f"{bench}_recalls":
                if not ks:
                    raise InvalidInputError("empty Ks")
                wanted += [(f"{bench}_r{k}", bench, k) for k in ks]
            elif t.startswith(f"{bench}_r") and t[len(bench) + 2 :].isdigit():
                wanted.append((t, bench, int(t[len(bench) + 2 :])))
        if t in ("eccv_map_at_r", "eccv_rprecision"):
            wanted.append((t, t, 0))
    out: dict[str, dict[str, float]] = {}
    for direction, lists in rankings.items():
        qkind, gkind = ("image", "caption") if direction == "i2t" else ("caption", "image")
        if not isinstance(lists, dict):
            raise InvalidInputError("not a dict")
        clean: dict[int, list[int]] = {}
        for key, value in lists.items():
            if not is_int(key) or int(key) not in ref["sets"][qkind]:
                raise InvalidInputError("query key")
            if not isinstance(value, (list, tuple)) or not all(is_int(v) for v in value):
                raise InvalidInputError("list type")
            value = [int(v) for v in value]
            if len(set(value)) != len(value) or any(v not in ref["sets"][gkind] for v in value):
                raise InvalidInputError("list ids")
            clean[int(key)] = value
        for name, kind, k in wanted:
            bench = {"coco_1k": "coco", "coco_5k": "coco", "cxc": "cxc"}.get(kind, "eccv")
            positives = ref["lists"][(bench, direction)]
            values = []
            for q in positives:
                if q not in clean:
                    raise InvalidInputError("missing query")
                ranked, gallery = clean[q], len(ref["ids"][gkind])
                if kind == "coco_1k":
                    qfold, gfold = ref["fold"][direction]
                    ranked = [g for g in ranked if gfold[g] == qfold[q]]
                    gallery //= 5
                pos, r = positives[q], len(positives[q])
                if kind in ("eccv_map_at_r", "eccv_rprecision"):
                    if len(ranked) < r:
                        raise InvalidInputError("short")
                    rel = [g in pos for g in ranked[:r]]
                    if kind == "eccv_rprecision":
                        values.append(sum(rel) / r)
                    else:
                        values.append(sum(sum(rel[: i + 1]) / (i + 1) for i in range(r) if rel[i]) / r)
                else:
                    kk = min(k, gallery)
                    hit = any(g in pos for g in ranked[:kk])
                    if not hit and len(ranked) < kk:
                        raise InvalidInputError("short")
                    values.append(float(hit))
            out.setdefault(name, {})[direction] = math.fsum(values) / len(values)
    return out


def mutate(rng: random.Random, ref: dict, base: dict) -> tuple[dict, list[str], object, str]:
    """One mutated input: (rankings, targets, Ks, path 'api' or 'json')."""
    rankings = {d: dict(lists) for d, lists in base.items()}
    if rng.random() < 0.3:
        del rankings[rng.choice(["i2t", "t2i"])]
    direction = rng.choice(list(rankings))
    lists = rankings[direction]
    gkind = GALLERY[direction]
    key = rng.choice(list(lists))
    row = list(lists[key])
    valid_kinds = ["truncate", "swap", "numpy"]
    bad_kinds = ["dup", "float", "str", "dict", "set", "drop", "unknown", "negative", "cross", "bool", "empty", "none"]
    kind = rng.choice(valid_kinds if rng.random() < 0.5 else bad_kinds + ["alias"])
    path = "json" if kind == "alias" or rng.random() < 0.2 else "api"
    j = rng.randrange(len(row))
    if kind == "truncate":
        lists[key] = row[: rng.randrange(0, len(row))]
    elif kind == "swap":
        i = rng.randrange(len(row))
        row[i], row[j] = row[j], row[i]
        lists[key] = row
    elif kind == "dup":
        row[j] = row[rng.randrange(len(row))]
        lists[key] = row
    elif kind == "float":
        row[j] = float(row[j])
        lists[key] = row
    elif kind == "str":
        row[j] = str(row[j])
        lists[key] = row
    elif kind == "dict":
        lists[key] = {g: 1.0 / (i + 1) for i, g in enumerate(row)}
    elif kind == "set":
        lists[key] = set(row)
    elif kind == "drop":
        del lists[key]
    elif kind == "unknown":
        lists[123] = row
    elif kind == "negative":
        row[j] = -row[j]
        lists[key] = row
    elif kind == "cross":
        other = "image" if gkind == "caption" else "caption"
        row[j] = rng.choice(ref["ids"][other])
        lists[key] = row
    elif kind == "bool":
        row[j] = True
        lists[key] = row
    elif kind == "numpy":
        import numpy as np

        lists[key] = np.asarray(row, dtype=np.int64).tolist() if rng.random() < 0.5 else [np.int64(x) for x in row]
    elif kind == "empty":
        lists[key] = []
    elif kind == "none":
        lists[key] = None
    names = ["coco_5k_r1", "coco_1k_r5", "cxc_r1", "eccv_r1", "eccv_map_at_r", "eccv_rprecision", "coco_5k_recalls",
             "eccv_recalls", "coco_1k_recalls"]  # fmt: skip
    targets = rng.sample(names, rng.randint(1, 3))
    good_ks = [(1, 5, 10), (1,), (5,), 5, (50,), (1000,), (10**9,), (2**70,)]
    bad_ks = [(), 5.0, None, (True,), ("5",), (0,), (-3,)]
    ks: object = rng.choice(good_ks if rng.random() < 0.8 else bad_ks)
    return rankings, targets, ks, path


def to_json_text(rng: random.Random, rankings: dict) -> str:
    """JSON text of the rankings (sets as sorted lists); sometimes with an aliased or repeated key."""
    payload = {}
    for d, lists in rankings.items():
        out = {}
        for k, v in lists.items():
            out[str(k)] = (
                sorted(v) if isinstance(v, set) else {str(a): b for a, b in v.items()} if isinstance(v, dict) else v
            )
        payload[d] = out
    text = json.dumps(payload, default=int)
    if rng.random() < 0.6:
        d = rng.choice(list(payload))
        k = rng.choice(list(payload[d]))
        alias = rng.choice(["0" + k, " " + k, "+" + k, k + ".0", k, "1_" + k])
        text = text.replace(f'"{d}": {{', f'"{d}": {{"{alias}": {json.dumps(payload[d][k], default=int)}, ', 1)
    return text


def reference_json(text: str) -> dict:
    """The reference reading of a rankings JSON: canonical integer keys, no key twice, i2t/t2i only."""

    def pairs(items: list) -> dict:
        keys = [k for k, _ in items]
        if len(set(keys)) != len(keys):
            raise InvalidInputError("key twice")
        return dict(items)

    raw = json.loads(text, object_pairs_hook=pairs)
    if not raw or set(raw) - {"i2t", "t2i"}:
        raise InvalidInputError("top level")
    out = {}
    for d, lists in raw.items():
        if any(not re.fullmatch("0|[1-9][0-9]*", k) for k in lists):
            raise InvalidInputError("key")
        out[d] = {int(k): v for k, v in lists.items()}
    return out


def run(seed: int, trials: int) -> dict:
    import numpy as np

    from eccv_metric import EvaluationError
    from eccv_metric import Metrics
    from eccv_metric.formats.rankings import load_rankings

    ref = load_reference()
    metrics = Metrics()
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    base = {}
    for d, qkind, gkind in (("i2t", "image", "caption"), ("t2i", "caption", "image")):
        gallery = np.asarray(ref["ids"][gkind])
        lists = {}
        own = ref["lists"][("coco", d)]
        for q in ref["ids"][qkind]:
            row = gallery[nrng.choice(len(gallery), 50, replace=False)].tolist()
            for p in own[q]:
                if nrng.random() < 0.5 and p not in row:
                    row[int(nrng.integers(0, 50))] = p
            lists[q] = row
        base[d] = lists
    counts = {"scored": 0, "refused": 0}
    tmp = Path(tempfile.mkdtemp())
    for trial in range(trials):  # a fixed count: the same trials on every machine
        rankings, targets, ks, path = mutate(rng, ref, base)
        text = to_json_text(rng, rankings) if path == "json" else ""
        try:
            expected = reference_metrics(ref, reference_json(text) if text else rankings, targets, ks)
        except InvalidInputError:
            expected = None
        try:
            if path == "json":
                (tmp / "r.json").write_text(text)
                loaded = load_rankings(tmp / "r.json")
                got = metrics.compute_all_metrics(loaded.get("i2t"), loaded.get("t2i"), targets, ks)
            else:
                got = metrics.compute_all_metrics(rankings.get("i2t"), rankings.get("t2i"), targets, ks)
        except EvaluationError:
            got = None
        if (got is None) != (expected is None):
            raise AssertionError(f"trial {trial}: engine {'refused' if got is None else got}, reference {expected}")
        if got is not None and got != expected:
            for name, by_dir in expected.items():
                for d, value in by_dir.items():
                    assert abs(got[name][d] - value) <= 1e-12, (trial, name, d, got[name][d], value)
        counts["scored" if got is not None else "refused"] += 1
    return counts


def test_mutated_inputs_give_exact_numbers_or_evaluation_errors():
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    code = "import json, sys; from tests.integration.test_robustness import run; print(json.dumps(run(20261122, 60)))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=600,
        env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts["scored"] >= 5 and counts["refused"] >= 5, counts


# Embeddings: scaled, tiny, zero, NaN and inf rows --------------------------------------------------------


def reference_ranks(queries: object, gallery: object, positives: list, normalize: bool, tol: float = 2e-5):
    """1-based rank of each query's best positive from float64 scores, and whether a near-tie makes it ambiguous.

    Written apart from the engine: float64 rows (normalised in float64 from the values given), the best
    positive by (score desc, position asc), rank = #higher + #equal given earlier + 1.
    """
    import numpy as np

    a = np.asarray(queries, dtype=np.float64)
    b = np.asarray(gallery, dtype=np.float64)
    if normalize:  # rows first divided by their largest |value| (direction unchanged), so squares never overflow
        for x in (a, b):
            x /= np.abs(x).max(axis=1, keepdims=True)
            x /= np.sqrt((x * x).sum(axis=1, keepdims=True))
    ranks = np.zeros(len(a), dtype=np.int64)
    ambiguous = np.zeros(len(a), dtype=bool)
    for start in range(0, len(a), 512):
        block = a[start : start + 512] @ b.T
        for r, row in enumerate(block):
            pos = positives[start + r]
            best = row[pos].max()
            first = pos[row[pos] == best].min()
            ranks[start + r] = int((row > best).sum() + ((row == best) & (np.arange(len(row)) < first)).sum()) + 1
            others = np.delete(row, first)
            scale = max(1.0, float(np.abs(row).max()))
            ambiguous[start + r] = bool((np.abs(others - best) < tol * scale).any())
    return ranks, ambiguous


def run_embeddings(seed: int, trials: int) -> dict:
    """Mutated embeddings through the API: per-query ranks equal the float64 reference, or EvaluationError."""
    import numpy as np

    from eccv_metric import EvaluationError
    from eccv_metric import Metrics

    metrics = Metrics()
    gt = metrics.gt
    rng = np.random.default_rng(seed)
    img = rng.standard_normal((5000, 16)).astype(np.float32)
    cap = (img[gt.caption_image] + 1.5 * rng.standard_normal((25000, 16))).astype(np.float32)
    positives = {
        "i2t": [np.flatnonzero(gt.caption_image == i) for i in range(5000)],
        "t2i": [np.array([i]) for i in gt.caption_image],
    }
    counts = {"scored": 0, "refused": 0, "compared": 0}
    kinds = ["scaled32", "tiny", "scaled64", "plain", "zero", "zero_raw", "nan", "inf"]
    trial = 0
    while trial < max(trials, len(kinds)):  # a fixed count: the same trials on every machine
        kind = kinds[trial] if trial < len(kinds) else kinds[int(rng.integers(len(kinds)))]
        trial += 1
        a, b = img.copy(), cap.copy()
        if kind == "scaled64":
            a, b = a.astype(np.float64), b.astype(np.float64)
        normalize = kind not in ("plain", "zero_raw")
        target = a if rng.random() < 0.5 else b
        rows = rng.choice(len(target), int(rng.integers(1, len(target) // 2)), replace=False)
        if kind == "scaled32":
            target[rows] *= np.float32(10.0 ** float(rng.choice([20, 24, 30, -24, -30, -37])))
        elif kind == "tiny":
            target[rows] *= np.float32(1e-40)  # subnormal float32: a direction, not zero
        elif kind == "scaled64":
            target[rows] *= 10.0 ** float(rng.choice([160, -160, 200]))  # float64 squares overflow or underflow
        elif kind in ("zero", "zero_raw"):
            target[rows[:3]] = 0
        elif kind == "nan":
            target[rows[0], int(rng.integers(16))] = np.nan
        elif kind == "inf":
            target[rows[0], int(rng.integers(16))] = np.inf * float(rng.choice([-1, 1]))
        valid = kind not in ("nan", "inf", "zero")
        try:
            got = metrics.per_query_from_embeddings(a, b, target_metrics=["coco_5k_meanr"], normalize=normalize)
        except EvaluationError:
            got = None
        if (got is None) == valid:
            raise AssertionError(f"trial {trial} ({kind}): engine {'refused' if got is None else 'scored'}")
        if got is None:
            counts["refused"] += 1
            continue
        for direction, (q, g) in (("i2t", (a, b)), ("t2i", (b, a))):
            ranks, ambiguous = reference_ranks(q, g, positives[direction], normalize)
            ours = got["coco_5k_meanr"][direction].values
            assert ambiguous.mean() < 0.1, (trial, kind, direction, ambiguous.mean())
            bad = np.flatnonzero((ours != ranks) & ~ambiguous)
            assert len(bad) == 0, (trial, kind, direction, bad[:5], ours[bad[:5]], ranks[bad[:5]])
            counts["compared"] += int((~ambiguous).sum())
        counts["scored"] += 1
    return counts


def test_embeddings_fuzz_gives_reference_ranks_or_evaluation_errors():
    counts = _child("run_embeddings(20261123, 12)")
    assert counts["scored"] >= 4 and counts["refused"] >= 3 and counts["compared"] > 100_000, counts


# TREC runs: Unicode digits, BOM, underscores, huge ids ------------------------------------------------------

_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ARABIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_ASCII_ID = re.compile(r"(image|caption)-(0|[1-9][0-9]*)")
_ASCII_RANK = re.compile(r"[+-]?[0-9]{1,18}")
_ASCII_SCORE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def reference_run(text: str) -> dict:
    """A TREC run read apart from the engine: ASCII decimal ids below 2^63, one BOM allowed, ties refused."""
    if text.startswith("\ufeff"):
        text = text[1:]
    groups: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
    for line in text.split("\n"):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6 or not all(c.isascii() for c in line):
            raise InvalidInputError("fields")
        query, doc, rank, score = parts[0], parts[2], parts[3], parts[4]
        for ident in (query, doc):
            match = _ASCII_ID.fullmatch(ident)
            if match is None or int(match.group(2)) >= 2**63:
                raise InvalidInputError("id")
        if not _ASCII_RANK.fullmatch(rank) or not _ASCII_SCORE.fullmatch(score) or not math.isfinite(float(score)):
            raise InvalidInputError("rank or score")
        groups.setdefault((query, doc.split("-")[0]), []).append((-float(score), int(rank), int(doc.split("-")[1])))
    out: dict[str, dict[int, list[int]]] = {}
    for (query, dkind), items in groups.items():
        items.sort()
        if len({(s, r) for s, r, _ in items}) != len(items):
            raise InvalidInputError("tie")
        qkind, qid = query.split("-")
        direction = {("image", "caption"): "i2t", ("caption", "image"): "t2i"}.get((qkind, dkind))
        if direction is not None:
            out.setdefault(direction, {})[int(qid)] = [d for _, _, d in items]
    return out


RUN_MUTATIONS = [
    "fullwidth_doc", "arabic_query", "bom", "underscore_id", "underscore_rank", "underscore_score", "id_2_63",
    "id_30_digits", "id_max_int64", "leading_zero", "tie", "swap", "plus_rank", "none",
]  # fmt: skip


def mutate_run(rng: random.Random, lines: list[str]) -> tuple[str, str]:
    """(kind, run text) with one mutation: Unicode digits, BOM, underscores, huge ids, leading zeros, ties."""
    lines = list(lines)
    k = rng.randrange(len(lines))
    q, q0, doc, rank, score, tag = lines[k].split()
    kind = rng.choice(RUN_MUTATIONS)
    prefix, digits = doc.split("-")
    if kind == "fullwidth_doc":
        doc = f"{prefix}-{digits.translate(_FULLWIDTH)}"
    elif kind == "arabic_query":
        qp, qd = q.split("-")
        q = f"{qp}-{qd[:2]}{qd[2:].translate(_ARABIC)}"
    elif kind == "underscore_id":
        doc = f"{prefix}-{digits[:2]}_{digits[2:]}"
    elif kind == "underscore_rank":
        rank = f"{rank}_0"
    elif kind == "underscore_score":
        score = f"1_{score}"
    elif kind == "id_2_63":
        doc = f"{prefix}-{2**63}"
    elif kind == "id_30_digits":
        doc = f"{prefix}-{'7' * 30}"
    elif kind == "id_max_int64":
        doc = f"{prefix}-{2**63 - 1}"  # an id, but not a test item
    elif kind == "leading_zero":
        doc = f"{prefix}-0{digits}"
    elif kind == "plus_rank":
        rank = f"+{rank}"  # a signed integer rank: valid
    lines[k] = " ".join((q, q0, doc, rank, score, tag))
    if kind == "tie":  # two documents of one query with the same score and rank
        other = next(j for j in range(len(lines)) if j != k and lines[j].split()[0] == q)
        parts = lines[other].split()
        lines[other] = " ".join(parts[:3] + [rank, score, tag])
    elif kind == "swap":
        j = rng.randrange(len(lines))
        lines[j], lines[k] = lines[k], lines[j]
    text = "\n".join(lines) + "\n"
    return kind, ("\ufeff" + text if kind == "bom" else text)


def run_trec(seed: int, trials: int) -> dict:
    """Mutated TREC runs (top-10 i2t lists of every image) through read_run + the API, against the reference; a
    run the vectorised reader reads, the line reader reads the same (tests/unit/test_trec_fast.py: more)."""
    import numpy as np

    from eccv_metric import EvaluationError
    from eccv_metric import Metrics
    from eccv_metric.formats.trec import read_run
    from eccv_metric.formats.trec_lines import fast_columns
    from eccv_metric.formats.trec_lines import line_columns

    ref = load_reference()
    metrics = Metrics()
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    captions = np.asarray(ref["ids"]["caption"])
    lines = []
    for q in ref["ids"]["image"]:
        ranked = captions[nrng.choice(len(captions), 10, replace=False)].tolist()
        own = sorted(ref["lists"][("coco", "i2t")][q])
        if nrng.random() < 0.6 and own[0] not in ranked:
            ranked[int(nrng.integers(0, 10))] = own[0]
        lines += [f"image-{q} Q0 caption-{d} {r} {20 - r}.25 t" for r, d in enumerate(ranked, 1)]
    counts = {"scored": 0, "refused": 0}
    tmp = Path(tempfile.mkdtemp()) / "run.trec"
    trial = 0
    while trial < trials:  # a fixed count: the same trials on every machine
        kind, text = mutate_run(rng, lines)
        trial += 1
        targets = rng.sample(["coco_5k_r1", "coco_5k_r5", "eccv_r1", "cxc_r1"], 2)
        if rng.random() < 0.2:
            targets.append(rng.choice(["coco_1k_r1", "eccv_map_at_r"]))  # not decidable from top-10 lists
        try:
            expected = reference_metrics(ref, reference_run(text), targets, (1, 5))
        except InvalidInputError:
            expected = None
        tmp.write_text(text, encoding="utf-8")
        fast = fast_columns(tmp)  # the vectorised reader reads a file as the line reader does, or leaves it to it
        if fast is not None:
            assert same_columns(fast, line_columns(tmp)), (trial, kind)
        try:
            loaded = read_run(tmp)
            got = metrics.compute_all_metrics(loaded.get("i2t"), None, targets, (1, 5))
        except EvaluationError:
            got = None
        if (got is None) != (expected is None):
            raise AssertionError(f"trial {trial} ({kind}): engine {'refused' if got is None else got}, ref {expected}")
        if got is not None:
            for name, by_dir in expected.items():
                for d, value in by_dir.items():
                    assert abs(got[name][d] - value) <= 1e-12, (trial, kind, name, d, got[name][d], value)
        counts["scored" if got is not None else "refused"] += 1
    return counts


def same_columns(a: tuple, b: tuple) -> bool:
    """Two reads of a run's lines (eccv_metric.formats.trec_lines): every column bit for bit, the line numbers,
    the query tokens in their order."""
    return (
        list(a[0]) == list(b[0])
        and all(a[0][k].dtype == b[0][k].dtype and a[0][k].tobytes() == b[0][k].tobytes() for k in a[0])
        and a[1].tobytes() == b[1].tobytes()
        and list(a[2].items()) == list(b[2].items())
    )


def test_trec_fuzz_gives_reference_numbers_or_evaluation_errors():
    counts = _child("run_trec(20261124, 30)")
    assert counts["scored"] >= 3 and counts["refused"] >= 5, counts


def _child(call: str) -> dict:
    """Run ``call`` (a function of this module) in a child process under the address-space limit."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    code = f"import json; from tests.integration.test_robustness import *; print(json.dumps({call}))"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, preexec_fn=limit, capture_output=True, text=True, timeout=900,
        env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
