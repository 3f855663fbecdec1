"""Layer 5: evaluate(input, metrics, ks) -> Results; Metrics, the one compatibility shim (FineGrainedMetrics:
its deprecated alias)."""
