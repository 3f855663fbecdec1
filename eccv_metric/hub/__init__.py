"""Layer 7: the evaluate module eccv_map_at_r, its Space app, and its Arrow glue."""
