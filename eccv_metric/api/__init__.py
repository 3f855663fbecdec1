"""Layer 5: evaluate(input, metrics, ks) -> Results; Metrics and FineGrainedMetrics (thin shims)."""
