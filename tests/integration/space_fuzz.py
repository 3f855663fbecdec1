"""Seeded hostile inputs to the Space's handler, in a process capped at 3 GB of address space.

Run by tests/integration/test_space.py as ``python -m tests.integration.space_fuzz FOLDER SEED N``: it
writes each case's files under FOLDER, calls ``eccv_metric.hub.space.score`` and checks the answer: either
the library's numbers for the same input (the example's lists through ``evaluate``, formatted by
``analysis.report``) or one ``error:`` line that is not an internal error. The last stdout line is a JSON
summary; any broken rule exits 1 naming the case.
"""

from __future__ import annotations

import json
import random
import resource
import sys
from pathlib import Path

CAP = 3 << 30
KS = ["", "1", "1 5 10", "1,5", " 10 ", "²", "١", "５", "0", "-1", "1.5", "1e3", "100001", "99999", "1" * 30,
      " ".join(map(str, range(1, 12))), "1\x00", "1;5", "0x10", "+5"]  # fmt: skip
NAMES = ["rankings.json", "R.JSON", "r.Json", "run.txt", "run.trec", "m.npy", "M.NPY", "r.bin", "rankings"]
METRICS = ["eccv_map_at_r", "eccv_r1", "eccv_rprecision", "coco_5k_recalls", "coco_5k_r1", "cxc_r1", "eccv_medr",
           "", "x" * 100, "eccv_r0", "eccv_r99999999999999999999", "EVAL", "pmrp", "coco_1k_r5", None, 7]  # fmt: skip


SAFE = {"eccv_map_at_r", "eccv_r1", "eccv_rprecision", "coco_5k_recalls", "coco_5k_r1", "cxc_r1"}


def ks_ok(text: str) -> bool:
    tokens = text.replace(",", " ").split()
    return not tokens or (
        len(tokens) <= 10 and all(t.isascii() and t.isdigit() and 1 <= int(t) <= 100_000 for t in tokens)
    )


def contents(example: str, rng: random.Random) -> tuple[bytes, bool]:
    """Bytes of a rankings file and whether they hold the example's lists (valid JSON of them)."""
    choice = rng.randrange(14)
    if choice == 0:
        return example.encode(), True
    if choice == 1:
        return b"\xef\xbb\xbf" + example.encode(), True  # UTF-8 with BOM
    if choice == 2:
        return example.encode("utf-16"), True
    if choice == 3:
        return example.encode()[: rng.randrange(1, len(example))], False  # truncated
    if choice == 4:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200))), False
    if choice == 5:
        return ("[" * 200_000 + "]" * 200_000).encode(), False  # nested too deeply
    if choice == 6:
        return example.replace("770337", '"770337"').encode(), False  # a string id
    if choice == 7:
        return example.replace("770337", "770337.0").encode(), False
    if choice == 8:
        return example.replace('"i2t"', '"I2T"').encode(), False
    if choice == 9:
        return example.replace('"184791"', '"0184791"').encode(), False
    if choice == 10:
        return b"null", False
    if choice == 11:
        return example.replace("770337", str(2**70)).encode(), False
    if choice == 12:
        return b'{"i2t": {"184791": [1, 2], "184791": [3]}}', False
    return json.dumps({"i2t": {"184791": list(range(5000))}}).encode(), False  # ids not in the split


def hostile(case: int, folder: Path, example: str, rng: random.Random, np: object) -> tuple[dict, bool]:
    """A request with something wrong (or odd) in it, and whether it is still valid."""
    from eccv_metric.hub import space

    ks = rng.choice(KS) if rng.random() < 0.5 else "1 5 10"
    metrics = rng.sample(METRICS, rng.randrange(1, 4)) if rng.random() < 0.5 else ["eccv_map_at_r", "eccv_r1"]
    kwargs: dict = {"ks_text": ks, "metrics": metrics, "partial": rng.random() < 0.8}
    valid = ks_ok(ks) and kwargs["partial"]  # the example lists are partial
    shape = rng.randrange(4)
    space.MAX_FILE_BYTES = 600 * 2**20 if rng.random() < 0.85 else 50  # sometimes a tiny cap
    if shape == 0:  # pasted text
        data, good = contents(example, rng)
        kwargs["pasted"] = data.decode("utf-8", "replace")
        valid &= good and kwargs["pasted"] == example
    elif shape == 1:  # an upload with any name
        data, good = contents(example, rng)
        name = rng.choice(NAMES)
        path = folder / f"{case}" / name
        path.parent.mkdir()
        path.write_bytes(data)
        kwargs["upload"] = str(path)
        valid &= good and name.lower().endswith(".json") and len(data) <= space.MAX_FILE_BYTES
    elif shape == 2:  # both at once: refused
        path = folder / f"{case}.json"
        path.write_text(example)
        kwargs.update(upload=str(path), pasted=example)
        valid = False
    else:  # hostile .npy files as matrices or embeddings
        path = folder / f"{case}.npy"
        kind = rng.randrange(4)
        if kind == 0:
            np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)  # type: ignore[attr-defined]
        elif kind == 1:
            np.save(path, np.zeros((3, 4, 5), np.float32))  # type: ignore[attr-defined]
        elif kind == 2:
            np.save(path, np.full((7, 3), np.nan, np.float32))  # type: ignore[attr-defined]
        else:
            path.write_bytes(b"\x93NUMPY" + bytes(rng.randrange(256) for _ in range(64)))
        kwargs[rng.choice(["upload", "image_embeddings", "caption_embeddings"])] = str(path)
        valid = False
    return kwargs, valid


def main(folder: Path, seed: int, n: int) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
    import numpy as np

    from eccv_metric import Rankings
    from eccv_metric import evaluate
    from eccv_metric.analysis.report import shown
    from eccv_metric.hub import space

    rng = random.Random(seed)
    example = space.EXAMPLE
    lists = {d: {int(k): v for k, v in ranked.items()} for d, ranked in json.loads(example).items()}
    summary = {"cases": 0, "ok": 0, "errors": 0}
    for case in range(n):
        if rng.random() < 0.35:  # a good request in one of its forms: the library's numbers expected
            ks = rng.choice([k for k in KS if ks_ok(k)])
            kwargs = {"ks_text": ks, "metrics": rng.sample(sorted(SAFE), rng.randrange(1, 4)), "partial": True}
            space.MAX_FILE_BYTES = 600 * 2**20
            if rng.random() < 0.3:
                kwargs["pasted"] = example
            else:
                data = rng.choice([example.encode(), b"\xef\xbb\xbf" + example.encode(), example.encode("utf-16")])
                path = folder / f"{case}" / rng.choice(["rankings.json", "R.JSON", "r.Json"])
                path.parent.mkdir()
                path.write_bytes(data)
                kwargs["upload"] = str(path)
            valid = True
        else:
            kwargs, valid = hostile(case, folder, example, rng, np)
        metrics = kwargs["metrics"]
        ks = kwargs["ks_text"]
        answer = space.score(**kwargs)
        summary["cases"] += 1
        where = f"case {case}: {json.dumps({k: str(v)[:80] for k, v in kwargs.items()})}"
        if not answer.ok:
            summary["errors"] += 1
            text = answer.message
            bad = "\n" in text or not text.startswith("error: ") or "internal error" in text
            if bad or valid and set(metrics) <= SAFE:
                print(f"{where}\n  unexpected answer: {answer.message}")
                return 1
            continue
        summary["ok"] += 1
        names = [m for m in metrics if m]
        parsed_ks = [int(t) for t in ks.replace(",", " ").split()] or [1, 5, 10]
        expected = evaluate(Rankings(**lists), names, parsed_ks, partial=True).means()
        rows = [[m] + [shown(m, v[d]) for d in ("i2t", "t2i")] for m, v in expected.items()]
        if answer.means != expected or [r[1:-1] for r in answer.rows] != rows or not valid:  # id, values
            print(f"{where}\n  numbers differ from the library: {answer.means} vs {expected}")
            return 1
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
