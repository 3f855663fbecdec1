"""Layer 4: plan (metric names -> jobs) and run (the one engine)."""
