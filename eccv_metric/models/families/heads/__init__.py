"""Pair heads: transformers models that score (image, caption) pairs (BLIP and BLIP-2 ITM, ViLT, BridgeTower, FLAVA)
as :class:`~eccv_metric.models.families.pair_scorer.PairScorer` adapters, their registry
(:mod:`~eccv_metric.models.families.heads.registry`: which class is which head, and the ``hf-itm:`` family), what
they share (loading, captions as each model's own code reads them, cross-attention keys once per image)."""
