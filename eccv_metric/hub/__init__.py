"""Layer 7: the evaluate module eccv_map_at_r, its Space app, its Arrow glue; the Hub's eval results (eval.yaml
tasks, a run's submission, .eval_results files, the per-query details repo, publishing them, the Hub leaderboard
and published details read back)."""
