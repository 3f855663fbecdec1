"""``python -m tests.integration.mteb_run <out> <folder>|<ties|no-ties>|<k,...>|<group,...> ...``: mteb.evaluate.

Run as a subprocess of test_mteb.py (mteb and torch stay out of the test process; offline; every cache in
``out``), with the hashing encoder. Writes ``out/scores.json`` ({mode: {task name: {subset: mteb's scores}}})
and mteb's own ``out/<mode>/<task>_predictions.json``. The tasks are ``eccv_caption_dataset.mteb.tasks`` on the
folder, loaded by mteb's own loader.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import torch
from mteb.models.abs_encoder import AbsEncoder
from mteb.models.model_meta import ModelMeta

from tests.integration.hashing import DIM
from tests.integration.hashing import Hashing
from tests.integration.hashing import image_id_of


class HashingEncoder(AbsEncoder):
    """mteb's EncoderProtocol over :class:`~tests.integration.hashing.Hashing` (queries and documents differ)."""

    def __init__(self, folder: str, ties: bool):
        self.hashing = Hashing(folder, ties)
        self.mteb_model_meta = ModelMeta(
            loader=None,
            name="local/hashing-encoder",
            revision="ties" if ties else "no-ties",
            release_date="2026-01-01",
            languages=["eng-Latn"],
            n_parameters=0,
            memory_usage_mb=None,
            max_tokens=None,
            embed_dim=DIM + 1,
            license="mit",
            open_weights=True,
            public_training_code=None,
            public_training_data=None,
            framework=["NumPy"],
            similarity_fn_name="dot",
            use_instructions=False,
            training_datasets=set(),
            modalities=["text", "image"],
        )

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kwargs):  # noqa: ANN001, ANN201
        role = "query" if str(prompt_type).endswith("query") else "document"
        rows = []
        for batch in inputs:  # dict batches: "image" is a list of PIL images, "text" a list of str
            if "image" in batch:
                ids = [image_id_of(image) for image in batch["image"]]  # the pixels say which image it is
                rows.append(self.hashing.embed("image", ids, role))
            else:
                ids = [int(i.removeprefix("caption-")) for i in batch["id"]]
                texts = list(batch["text"])  # mteb strips a document's text (title + body); the words are the same
                assert [t.strip() for t in texts] == [self.hashing.text[i].strip() for i in ids]
                rows.append(self.hashing.embed("caption", ids, role, texts))
        return np.vstack(rows)

    def similarity(self, embeddings1, embeddings2):  # noqa: ANN001, ANN201
        return torch.from_numpy(np.asarray(embeddings1, np.float32) @ np.asarray(embeddings2, np.float32).T)


def main(out: str, specs: list[str]) -> None:
    """``specs``: ``<folder>|<mode>|<k_values>|<groups>``, mode ``ties`` / ``no-ties``; one mteb.evaluate each."""
    import mteb
    from mteb.cache import ResultCache
    from mteb.models.search_wrappers import SearchEncoderWrapper

    from eccv_caption_dataset.mteb import tasks

    scores: dict = {}
    for spec in specs:
        folder, mode, ks, groups = spec.split("|")
        model = SearchEncoderWrapper(HashingEncoder(folder, mode == "ties"), corpus_chunk_size=5000)
        results = mteb.evaluate(
            model,
            tasks=tasks(folder, revision="local", names=groups.split(","), k_values=map(int, ks.split(","))),
            cache=ResultCache(cache_path=str(Path(out) / "results")),
            overwrite_strategy="always",
            prediction_folder=Path(out) / mode,
            encode_kwargs={"batch_size": 1024, "show_progress_bar": False},
            show_progress_bar=False,
        )
        for result in results.task_results:
            scores.setdefault(mode, {})[result.task_name] = {row["hf_subset"]: row for row in result.scores["test"]}
    (Path(out) / "scores.json").write_text(json.dumps(scores))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
