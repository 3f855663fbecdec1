"""Layer 3: the registry: definitions (data), metric names, resources (ground truth on demand), docs."""
