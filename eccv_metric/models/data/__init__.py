"""Where a model run's items come from: which items a benchmark needs (:mod:`~eccv_metric.models.data.items`),
the built folder or Hub repo holding their pixels and texts (:mod:`~eccv_metric.models.data.source`), and the
content digests of the files they are read from (:mod:`~eccv_metric.models.data.digests`)."""
