"""Layer 1: the formulas (R@K, R-P, mAP@R, capped R-P, ranks), metric kinds, results, Spearman bootstrap."""
