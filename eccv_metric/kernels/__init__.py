"""Layer 1: stable top-k of score blocks, exact first-positive ranks, scorers (matrix, embeddings), workers."""
