"""Models that score (image, caption) pairs: ITM heads and cross-encoders (:mod:`~eccv_metric.models.pairs.scorer`:
the :class:`~eccv_metric.models.pairs.scorer.PairScorer` protocol), scored exhaustively or reranking a first stage."""
