"""Layer 0: errors, ids, positives (CSR), views, options, strict JSON, files (atomic), downloads, built folders."""
