"""Layer 3: Rankings (dicts, arrays, TREC), ScoreMatrix, Embeddings, and the one rule choosing among them."""
