"""The documents stage (asset group "documents"): sources and their registry, documents, chunks, chunk
embeddings and BM25 statistics."""
