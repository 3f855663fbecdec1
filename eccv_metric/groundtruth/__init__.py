"""Layer 2: the 5K split (wheel, cache, built folder), CxC ratings, PM categories, FG files: the parsers."""
