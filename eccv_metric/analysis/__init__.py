"""Layer 6: compare (CIs, paired tests), leaderboard and correlate, report (the one number formatter)."""
