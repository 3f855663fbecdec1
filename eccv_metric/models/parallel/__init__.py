"""One process or many: blocks dealt to torchrun ranks or independent jobs (:mod:`~eccv_metric.models.parallel.world`),
an encoder's batches written by every process before one scores (:mod:`~eccv_metric.models.parallel.fill`)."""
