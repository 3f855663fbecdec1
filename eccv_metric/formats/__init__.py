"""Layer 6: files users give: rankings JSON, id files, TREC runs and qrels."""
