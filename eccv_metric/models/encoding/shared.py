"""Several models, one decode: image batches decoded and prepared once, encoded by every model of a run that
prepares images the same way (issue 40: "a sweep should cost one decode").

Two models share when their :func:`share_key` is equal: the encoder's ``image_preprocessing`` (what its
``prepare_image`` does, as data: a transformers image processor's class and configuration, open_clip's
transform; an encoder without it shares nothing), the decoder (PIL, or ``decode="gpu"``'s nvJPEG and tensor
preprocessing) and the batching (batch size, and whether the model batches itself). Equal keys give equal
prepared batches, so each model's embeddings are those of a run of its own, bit for bit.

:func:`link` gives each store the later stores of its group as companions. While a store encodes an image
set's batches, each companion that has no finished cache entry for the same items encodes the same prepared
batch (:func:`feeder`) and receives its rows (:meth:`EmbeddingStore.receive
<eccv_metric.models.cache.store.EmbeddingStore.receive>`, in memory, by the cache key the companion's own run will
compute); the companion's own run then takes those batches as encoded and decodes only what it did not
receive (a batch the first model resumed from its cache, say). Captions are not shared (each model has its
own tokenizer). Memory: every model of a group is loaded at once (:func:`~eccv_metric.models.many.load_groups`),
plus each companion's received rows until its own run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.data.items import Items
from eccv_metric.models.encoding.encode import Bounds
from eccv_metric.models.encoding.encode import as_rows


def share_key(store: Any) -> str | None:
    """What two stores must agree on to share prepared images (see the module docstring); None: nothing."""
    encoder = store.encoder
    described = getattr(encoder, "image_preprocessing", None)
    if "image" not in encoder.kinds or described is None:
        return None
    decoder = store.decoder.describe if store.decoder is not None else "pil"
    batching = [store.batch_size, bool(encoder.batches_itself), encoder.device, encoder.precision]
    return json.dumps([described, decoder, batching], sort_keys=True, default=str)


def link(stores: list[Any]) -> None:
    """Each store's companions: the later stores with its :func:`share_key`."""
    groups: dict[str, list[Any]] = {}
    for store in stores:
        key = share_key(store)
        if key is not None:
            groups.setdefault(key, []).append(store)
    for members in groups.values():
        for k, store in enumerate(members):
            store.companions = members[k + 1 :]


def feeder(leader: Any, items: Items) -> Callable[[Bounds, Any], None] | None:
    """What ``leader`` calls with each prepared image batch of ``items`` it encodes: every companion still
    lacking these items' embeddings encodes the batch and receives its rows; None when none lacks them."""
    takers = [c for c in leader.companions if not c.has_finished(items)]
    if not takers:
        return None
    what = f"{items.item_set.collection} images ({items.item_set.label})"

    def feed(bounds: Bounds, pixels: Any) -> None:
        start, stop = bounds
        for c in takers:
            where = f"{c.encoder.spec} on {what} {start}..{stop - 1}"
            try:
                made = c.encoder.encode_prepared(pixels)
            except EvaluationError:
                raise
            except Exception as exc:  # named: it surfaces while another model's images are encoded
                first = (str(exc).strip().splitlines() or [""])[0][:160]
                raise EvaluationError(
                    f"{where} (fed {leader.encoder.spec}'s decode): the model failed ({type(exc).__name__}: "
                    f"{first}); run it alone, or with share_decode=False"
                ) from exc
            c.receive(items, bounds, as_rows(made, stop - start, where), leader.encoder.spec)

    return feed
