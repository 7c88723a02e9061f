"""Index storage: snapshots, sparse (BM25) and dense vectors."""
