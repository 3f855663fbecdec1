"""Layer 7: the eccv-caption command: argparse in, evaluate() out."""
