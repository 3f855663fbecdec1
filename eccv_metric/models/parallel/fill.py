"""An encoder's item sets written by several processes, then assembled by one.

:func:`fill` runs in every process of a run (:class:`~eccv_metric.models.parallel.world.Workers`): for each item
set the store would encode (the same sets, parts and batches in every process: :meth:`EmbeddingStore.part`),
it encodes the batches dealt to this process that no earlier run finished and writes each to the set's cache
entry at once, as the store does (``partial/<start>-<stop>.npy``). It never assembles an entry: once every
process is done (a barrier, or a later run after independent jobs), one process's ordinary
:meth:`EmbeddingStore.embed` finds every batch written and assembles the entries without encoding.
"""

from __future__ import annotations

from eccv_metric.core.errors import EvaluationError
from eccv_metric.models.cache.store import EmbeddingStore
from eccv_metric.models.data.items import Items
from eccv_metric.models.data.items import ItemSet
from eccv_metric.models.parallel.world import Workers


def fill(store: EmbeddingStore, sets: list[ItemSet], items: dict[ItemSet, Items], workers: Workers) -> dict:
    """Encode this process's batches of every set not yet cached (see the module docstring); returns, per set
    label, the items encoded here."""
    if store.root is None:
        raise EvaluationError(
            f"{store.encoder.spec}: several processes (torchrun or shard=) meet in the cache, and this run has "
            "none: drop cache=False, and give a model with an identity (a spec, not a Python object)"
        )
    report = {}
    seen: set = set()
    store.deal = workers.mine
    try:
        for s in sets:
            fresh, part, entry = store.part(items[s], seen)
            seen.update(items[s].keys)
            if not fresh or entry is None or entry.finished() is not None:
                continue
            entry.begin()  # partial/key.json before any process reads the folder: none takes it for stale
            _, meta = store.values(part, entry)
            report[s.label] = meta.get("encoded", 0)
    finally:
        store.deal = None
    return report
