"""Layer 7: the evaluate module eccv_map_at_r, its Space app, its Arrow glue; the Hub's eval results (eval.yaml
tasks, .eval_results files, publishing them, the Hub leaderboard read back)."""
