"""Where an index lives: the embedded snapshot store or a remote engine (Milvus)."""
