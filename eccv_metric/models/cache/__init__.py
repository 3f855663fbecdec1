"""What a run keeps on disk: the store (the one owner of cache keys, whole-set hits, shared items and resumed
batches: :mod:`~eccv_metric.models.cache.store`), one checked entry per key
(:mod:`~eccv_metric.models.cache.entries`), and a rerun scored without loading its model
(:mod:`~eccv_metric.models.cache.recall`)."""
