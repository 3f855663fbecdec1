"""Captions as a pair head reads them: the model's own caption preprocessing, tokenised once per set, and each
batch of pairs' token rows gathered by index.

:func:`pre_caption` is BLIP's (``data/utils.py`` of salesforce/BLIP; LAVIS's ``BlipCaptionProcessor`` is the same
with another default): lower-cased, the characters ``.!"()*#:;~`` replaced by spaces, runs of two or more
whitespace characters made one space, trailing newline and outer spaces stripped, then cut to ``max_words``
words (split on single spaces). BLIP's own retrieval evaluation cuts at 30 words
(``coco_karpathy_retrieval_eval(..., max_words=30)``), LAVIS's ``blip_caption`` processor at 50.

:class:`Tokens` is a set's captions tokenised once (right-padded to the set's longest, cut at the model's token
limit), on the host; :meth:`Tokens.take` gives a batch's rows on the model's device, cut to the batch's longest
caption (padding is masked: the pair heads give the same scores at any padded width, within float rounding).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np

PUNCTUATION = re.compile(r"([.!\"()*#:;~])")
SPACES = re.compile(r"\s{2,}")


def pre_caption(caption: str, max_words: int) -> str:
    """BLIP's caption preprocessing (see the module docstring), exactly as its repository writes it."""
    caption = PUNCTUATION.sub(" ", caption.lower())
    caption = SPACES.sub(" ", caption)
    caption = caption.rstrip("\n")
    caption = caption.strip(" ")
    words = caption.split(" ")
    if len(words) > max_words:
        caption = " ".join(words[:max_words])
    return caption


@dataclass
class Tokens:
    """A set's captions as token ids and attention masks (int64 torch tensors on the host, right-padded to the
    set's longest caption) and each caption's length in tokens."""

    ids: Any
    mask: Any
    lengths: np.ndarray
    placed: dict = field(default_factory=dict)  # device -> (ids, mask) there: copied once per device

    def __len__(self) -> int:
        return len(self.lengths)

    def take(self, text_index: np.ndarray, device: str) -> tuple[Any, Any]:
        """The rows ``text_index`` (ids, mask) on ``device``, cut to the longest of them."""
        import torch

        if device not in self.placed:
            self.placed[device] = (self.ids.to(device), self.mask.to(device))
        ids, mask = self.placed[device]
        index = np.asarray(text_index, dtype=np.int64)
        width = int(self.lengths[index].max()) if len(index) else 0
        rows = torch.from_numpy(index).to(device)
        return ids[:, :width].index_select(0, rows), mask[:, :width].index_select(0, rows)


def tokenize_set(tokenizer: Any, texts: list[str], max_length: int | None, first_token: int | None = None) -> Tokens:
    """``texts`` through ``tokenizer`` (right padding to the longest, truncation at ``max_length`` tokens, the
    special tokens the tokenizer adds); ``first_token``: the id put in place of each caption's first token (BLIP's
    ``[ENC]`` for ITM, where the tokenizer puts ``[CLS]``)."""
    import torch

    truncation = {"truncation": True, "max_length": max_length} if max_length else {}
    out = tokenizer(list(texts), padding="longest", padding_side="right", return_tensors="np", **truncation)
    ids = np.ascontiguousarray(out["input_ids"], dtype=np.int64)
    mask = np.ascontiguousarray(out["attention_mask"], dtype=np.int64)
    if first_token is not None and ids.shape[1]:
        ids[:, 0] = first_token
    return Tokens(torch.from_numpy(ids), torch.from_numpy(mask), mask.sum(axis=1).astype(np.int64))
