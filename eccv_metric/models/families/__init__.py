"""What a model is: the :class:`~eccv_metric.models.families.encoder.Encoder` protocol, the family registry
(:mod:`~eccv_metric.models.families.registry`: what a spec prefix means), the families (``hf:``, ``st:``,
``open_clip:``), what identifies a model's weights and preprocessing, and what every torch family shares."""
