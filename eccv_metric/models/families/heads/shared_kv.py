"""Cross-attention keys and values once per distinct image of a batch of pairs, not once per pair.

In BLIP's image-grounded text encoder and BLIP-2's Q-Former, each cross-attention layer projects the image
states to keys and values (``key(image)``, ``value(image)``): work that depends on the image alone, and, for
BLIP's ViT-B/16 at 384 pixels (577 image tokens against a caption's 35), about two thirds of a pair's cost. A
batch that pairs one image with many captions (an image query's reranked candidates; a block of an exhaustive
run) projects the same image once per pair in the model's own forward. :class:`SharedProjections` hooks those
projections (forward hooks: the model and its weights unchanged): inside :meth:`SharedProjections.batch`, a
projection whose input is that batch's gathered image states runs on the batch's distinct images instead, and
its output is expanded to the pairs by index. The values are those of the model's own computation, row by row
(up to float rounding: a matrix product of other shape); a projection given anything else, or called outside a
batch, runs as it is (the hooks compare tensors by identity, so a library that copies the states first only
loses the saving, never the numbers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any

import numpy as np


class SharedProjections:
    """Hooks on a model's cross-attention key / value projections (module docstring)."""

    def __init__(self, model: Any, name_part: str = "crossattention"):
        self.active: tuple[Any, Any, Any] | None = None  # (the gathered states, the distinct ones, rows)
        names = [n for n, m in model.named_modules() if name_part in n and n.endswith((".key", ".value"))]
        modules = dict(model.named_modules())
        for name in names:
            modules[name].register_forward_pre_hook(self.before)
            modules[name].register_forward_hook(self.after)
        self.hooked = len(names)

    def before(self, module: Any, args: tuple) -> tuple | None:
        if self.active is not None and args and args[0] is self.active[0]:
            return (self.active[1], *args[1:])
        return None

    def after(self, module: Any, args: tuple, output: Any) -> Any:
        if self.active is not None and args and args[0] is self.active[1]:
            return output.index_select(0, self.active[2])
        return None

    @contextlib.contextmanager
    def batch(self, states: Any, image_index: np.ndarray, gather: Callable[[Any, np.ndarray], Any]) -> Iterator[Any]:
        """The batch's image states (``gather(states, image_index)``'s values); inside, the hooked projections
        read each distinct image once."""
        import torch

        distinct, inverse = np.unique(np.asarray(image_index, dtype=np.int64), return_inverse=True)
        if not self.hooked or len(distinct) == len(image_index):
            yield gather(states, image_index)
            return
        unique = gather(states, distinct)
        rows = torch.from_numpy(inverse.reshape(-1)).to(unique.device)
        # the pairs' states (correct values whether or not a hook fires): a view when there is one image
        gathered = unique.expand(len(rows), *unique.shape[1:]) if len(distinct) == 1 else unique.index_select(0, rows)
        self.active = (gathered, unique, rows)
        try:
            yield gathered
        finally:
            self.active = None
