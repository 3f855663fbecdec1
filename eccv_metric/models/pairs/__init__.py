"""A pair scorer's run (:mod:`~eccv_metric.models.pairs.run`): its protocol (rerank or exhaustive), the first stage's
candidates, the pair sets cut into fixed blocks, the pair stage on one process or many, the block cache, and the
scores as the engine's inputs. The models themselves (the :class:`~eccv_metric.models.families.pair_scorer.PairScorer`
protocol and its adapters) are in :mod:`eccv_metric.models.families`."""
