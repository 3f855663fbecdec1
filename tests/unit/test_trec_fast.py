"""The vectorised TREC run reader equals the line reader: on every input both give the same columns, or the
vectorised one hands the file to the line reader (which then reads it or refuses it in its own words); and a run
already in order is not sorted again, with the order a sort gives (eccv_metric.formats.trec_lines, trec)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from eccv_metric.core.errors import EvaluationError
from eccv_metric.formats import trec
from eccv_metric.formats import trec_lines
from eccv_metric.formats.trec_lines import fast_columns
from eccv_metric.formats.trec_lines import line_columns
from tests.integration.test_robustness import mutate_run
from tests.integration.test_robustness import same_columns

GOOD = [
    "image-1 Q0 caption-10 1 2.5 t",
    "image-1 Q0 caption-11 2 2.5 t",
    "image-1 Q0 caption-9 3 -0.0 t",
    "image-1 Q0 caption-12 4 0.0 t",
    "caption-10 Q0 image-1 1 1e3 run",
    "caption-10 Q0 image-2 2 -1.5E-7 run",
    "caption-10 Q0 image-3 3 .5 run",
    "caption-10 Q0 image-4 4 5. run",
    "image-2 Q0 caption-10 1 +3.25 x",
    "image-2 Q0 caption-10 2 3.25 x",  # a document twice
    "image-1 Q0 image-2 +7 0.1 y",  # i2i beside i2t in one file; a signed rank
    "image-9223372036854775807 Q0 caption-0 -3 123456789012345678901234567890 z",
    "caption-0 Q0 image-9223372036854775807 999999999999999999 2.2250738585072014e-308 z",
]


def both(path) -> bool:
    """Both readers on one file: the vectorised one reads it as the line reader does, or leaves it to it (never
    reads a file the line reader refuses). Whether the vectorised one read it."""
    try:
        line = line_columns(path)
    except EvaluationError:
        line = None
    fast = fast_columns(path)
    if fast is not None:
        assert line is not None and same_columns(fast, line)
    return fast is not None


def write(tmp_path, data: bytes):
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    return path


READ_FAST = {
    "plain": "\n".join(GOOD) + "\n",
    "no last newline": "\n".join(GOOD),
    "tabs and runs of spaces": "\n".join(line.replace(" ", " \t  ", 2) for line in GOOD) + "\n",
    "leading and trailing blanks": "\n".join(f"  \t{line} \t " for line in GOOD) + "\n",
    "CRLF": "\r\n".join(GOOD) + "\r\n",
    "empty and blank lines": "\n\n" + "\n \t \n".join(GOOD) + "\n\n  \n",
    "BOM": "\ufeff" + "\n".join(GOOD) + "\n",
    "BOM and CRLF": "\ufeff" + "\r\n".join(GOOD),
    "queries interleaved": "\n".join(GOOD[::2] + GOOD[1::2]) + "\n",
    "a tag of punctuation": "image-1 Q0 caption-1 1 1 !#$%&'()*,/:;<=>?@[]^_`{|}~\x7f\n",
    "nothing": "",
    "blank lines only": "\n \n\t\n",
}

LINE_READER = {  # files the vectorised reader leaves to the line reader (read, or refused with its words)
    "5 fields": "image-1 Q0 caption-1 1 2.0\n",
    "7 fields": "image-1 Q0 caption-1 1 2.0 t extra\n",
    "a comment line": "# a run\n" + "\n".join(GOOD) + "\n",
    "a lone CR": "\r".join(GOOD) + "\r",
    "CR CR LF": "\r\r\n".join(GOOD) + "\n",
    "a form feed": "image-1 Q0 caption-1 1\x0c2.0 t\n",
    "a vertical tab": "image-1\x0bQ0 caption-1 1 2.0 t\n",
    "a file separator": "image-1\x1cQ0 caption-1 1 2.0 t\n",
    "no-break space (UTF-8)": "image-1\u00a0Q0 caption-1 1 2.0 t\n",
    "a non-ASCII tag": "image-1 Q0 caption-1 1 2.0 \u00e9t\u00e9\n",
    "fullwidth digits": "image-1 Q0 caption-\uff17\uff17 1 2.0 t\n",
    "a NUL": "image-1 Q0 caption-1 1 2.0 t\x00\n",
    "score overflows": "image-1 Q0 caption-1 1 1e999 t\n",
    "score inf": "image-1 Q0 caption-1 1 inf t\n",
    "score 1_0": "image-1 Q0 caption-1 1 1_0 t\n",
    "score with two dots": "image-1 Q0 caption-1 1 1.2.3 t\n",
    "score a dot": "image-1 Q0 caption-1 1 . t\n",
    "score with no exponent digits": "image-1 Q0 caption-1 1 1e t\n",
    "rank of 19 digits": "image-1 Q0 caption-1 " + "9" * 19 + " 2.0 t\n",
    "rank a float": "image-1 Q0 caption-1 1.0 2.0 t\n",
    "rank a sign": "image-1 Q0 caption-1 - 2.0 t\n",
    "id 2^63": f"image-1 Q0 caption-{2**63} 1 2.0 t\n",
    "id of 20 digits": "image-1 Q0 caption-" + "1" * 20 + " 1 2.0 t\n",
    "id with a leading zero": "image-1 Q0 caption-07 1 2.0 t\n",
    "id with no digits": "image-1 Q0 caption- 1 2.0 t\n",
    "id of another kind": "image-1 Q0 video-7 1 2.0 t\n",
    "id in capitals": "image-1 Q0 Caption-7 1 2.0 t\n",
    "a field longer than the widest": "image-1 Q0 caption-1 1 " + "1" * 70 + " t\n",
    "not UTF-8": b"image-1 Q0 caption-1 1 2.0 t\n\xff\xfe\n",
    "a BOM inside": "\n".join(GOOD) + "\n\ufeff" + GOOD[0] + "\n",
}


@pytest.mark.parametrize("name", list(READ_FAST))
def test_well_formed_runs_are_read_by_the_vectorised_reader_as_by_the_line_reader(tmp_path, name):
    text = READ_FAST[name]
    assert both(write(tmp_path, text.encode("utf-8")))


@pytest.mark.parametrize("name", list(LINE_READER))
def test_other_runs_are_left_to_the_line_reader(tmp_path, name):
    text = LINE_READER[name]
    path = write(tmp_path, text if isinstance(text, bytes) else text.encode("utf-8"))
    assert not both(path)
    try:  # the public reader says what the line reader says
        want = ("read", line_columns(path))
    except EvaluationError as exc:
        want = ("refused", str(exc))
    try:
        got = ("read", trec_lines.read_columns(path))
    except EvaluationError as exc:
        got = ("refused", str(exc))
    assert got[0] == want[0] and (same_columns(got[1], want[1]) if got[0] == "read" else got[1] == want[1])


def test_chunks_cut_anywhere_read_the_same(tmp_path, monkeypatch):
    """Chunks of 1 to 64 bytes: lines (and CRLF pairs, and a BOM) cut at every place."""
    text = "\ufeff" + "\r\n".join(f" {line}\t" for line in GOOD * 3) + "\r\n\n" + GOOD[0]
    path = write(tmp_path, text.encode("utf-8"))
    whole = line_columns(path)
    for size in [*range(1, 17), 31, 64]:
        monkeypatch.setattr(trec_lines, "CHUNK", size)
        fast = fast_columns(path)
        assert fast is not None and same_columns(fast, whole), size


ALPHABET = [" ", "\t", "\n", "\r\n", "\r", "\x0c", "\x1f", "\u00a0", "\ufeff", "\uff17", "\x00", "0", "7", "9", "-",
            "+", ".", "e", "E", "_", "image-", "caption-", "Q0", "x", "#", "1e999", "9" * 19]  # fmt: skip


def mutate(rng: random.Random, text: str) -> str:
    """1 to 3 insertions, deletions or replacements of a piece of ``ALPHABET`` or of the text itself."""
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(text) + 1)
        piece = rng.choice(ALPHABET) if rng.random() < 0.8 else text[at : at + rng.randint(1, 12)]
        how = rng.random()
        if how < 0.4:
            text = text[:at] + piece + text[at:]
        elif how < 0.7:
            text = text[:at] + text[at + rng.randint(1, 4) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    return text


def test_byte_level_fuzz_gives_the_line_readers_columns_or_its_error(tmp_path, monkeypatch):
    """600 mutated runs (some read in chunks of a few bytes): never a file the line reader refuses, never other
    columns; most mutated runs still have a fast read somewhere among them."""
    rng = random.Random(20261207)
    base = "\n".join(GOOD) + "\n"
    fast = 0
    for trial in range(600):
        monkeypatch.setattr(trec_lines, "CHUNK", rng.choice([1 << 22, rng.randint(1, 80)]))
        text = mutate(rng, base if trial % 3 else "\r\n".join(GOOD))
        fast += both(write(tmp_path, text.encode("utf-8")))
    assert 50 < fast < 600, fast


def test_scores_are_the_floats_python_reads(tmp_path):
    """Random decimal scores (up to 40 digits, exponents past the float range both ways, -0.0): bit for bit."""
    rng = random.Random(3)
    scores = [
        "-0.0",
        "0e-999",
        "-0e999",
        "4.9406564584124654e-324",
        "2.4703282292062327e-324",
        "1.7976931348623157e308",
    ]
    for _ in range(3000):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
        dot = rng.randint(0, len(digits))
        mantissa = rng.choice([digits[:dot] + "." + digits[dot:], digits]) if dot else "." + digits
        exponent = rng.choice(["", f"e{rng.randint(-340, 300)}", f"E+{rng.randint(0, 300):03d}"])
        scores.append(rng.choice(["", "-", "+"]) + mantissa + exponent)
    text = "".join(f"image-1 Q0 caption-{k} {k} {s} t\n" for k, s in enumerate(scores))
    path = write(tmp_path, text.encode())
    assert not both(path)  # some overflow: the line reader refuses the file, and the vectorised one leaves it
    finite = [s for s in scores if np.isfinite(float(s))]
    path = write(tmp_path, "".join(f"image-1 Q0 caption-{k} {k} {s} t\n" for k, s in enumerate(finite)).encode())
    assert both(path)
    got = fast_columns(path)[0]["score"]  # type: ignore[index]
    assert got.tobytes() == np.array([float(s) for s in finite]).tobytes()


def near_tokens(rng: random.Random, kind: str) -> list[str]:
    """Document ids or ranks, most of them near the syntax's edges (signs, leading zeros, 18-20 digits, 2^63)."""
    out = [str(2**63 - 1), str(2**63), "0", "00", "-0", "+0", "1" * 18, "9" * 19, "1" * 19, "+", "-", ""]
    for _ in range(300):
        digits = "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 2, 3, 17, 18, 19, 20])))
        out.append(rng.choice(["", "", "+", "-", "0", "--", "+-", "e", "."]) + digits + rng.choice(["", "", "x", "."]))
    if kind == "rank":
        return out
    prefixes = ["image-", "caption-", "caption-", "image", "Image-", "caption_", "captio-", "image--", "-", ""]
    return [rng.choice(prefixes) + token.lstrip("+-") for token in out]


@pytest.mark.parametrize("kind", ["doc", "rank"])
def test_ids_and_ranks_are_read_as_the_syntax_reads_them(tmp_path, kind):
    """The vectorised reader reads an id or a rank exactly where the line reader does (no file it leaves is one
    the line reader reads), and the same number."""
    for token in near_tokens(random.Random(11 if kind == "doc" else 12), kind):
        fields = ["image-1", "Q0", token if kind == "doc" else "caption-1", token if kind == "rank" else "1", "2", "t"]
        path = write(tmp_path, (" ".join(fields) + "\n").encode())
        try:
            line_columns(path)
            accepted = True
        except EvaluationError:
            accepted = False
        assert both(path) == accepted, token


def test_the_robustness_fuzz_corpus_reads_alike(tmp_path):
    """The TREC mutations of tests/integration/test_robustness.py (Unicode digits, a BOM, underscores, huge ids,
    leading zeros, ties, signed ranks), 200 of them on a 300-line run."""
    rng = random.Random(20261124)
    lines = [f"image-{q} Q0 caption-{d} {r} {20 - r}.25 t" for q in range(30) for r, d in enumerate(range(10), 1)]
    fast = 0
    for _ in range(200):
        _, text = mutate_run(rng, lines)
        fast += both(write(tmp_path, text.encode("utf-8")))
    assert 50 < fast < 200, fast


@pytest.mark.parametrize("seed", range(4))
def test_a_run_in_order_is_not_sorted_and_gets_the_sorts_order(seed):
    """trec.in_order / trec_eval_order: 0, 1, 2, ... exactly where np.lexsort gives it; else lexsort's order."""
    rng = np.random.default_rng(seed)
    n = 400
    for trial in range(60):
        group = np.sort(rng.integers(0, 5, n))
        score = rng.choice([0.0, -0.0, 1.5, 2.0, 3.0], n)
        rank = rng.integers(1, 4, n)
        doc = rng.choice([9, 10, 11, 100, 12345], n)
        line = np.arange(1, n + 1)
        if trial % 2:  # in order, or nearly: sorted, then one pair swapped at times
            key = np.lexsort((line, doc, rank, -score, group))
            score, rank, doc = score[key], rank[key], doc[key]
            if trial % 4 == 1:
                i = int(rng.integers(0, n - 1))
                score[[i, i + 1]], rank[[i, i + 1]], doc[[i, i + 1]] = (
                    score[[i + 1, i]],
                    rank[[i + 1, i]],
                    doc[[i + 1, i]],
                )
        want = np.lexsort((line, doc, rank, -score, group))
        assert trec.in_order(group, -score, rank, doc, line) == bool((want == np.arange(n)).all())
        as_text = np.unique(doc.astype(str), return_inverse=True)[1].ravel()
        expected = np.lexsort((line, -as_text, -score, group))
        assert (trec.trec_eval_order(group, -score, doc, line) == expected).all()
        by_id = np.lexsort((line, -as_text, -score, group))
        s2, d2 = score[by_id], doc[by_id]
        assert (trec.trec_eval_order(group, -s2, d2, line) == np.arange(n)).all()
