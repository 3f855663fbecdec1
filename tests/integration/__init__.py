"""Integration tests: the real ground truth and source files, the official oracle, the dataset build, the Space."""
