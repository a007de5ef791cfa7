-- pgvector for embeddings and their HNSW indexes; pg_trgm for fuzzy entity-name matching.
CREATE EXTENSION IF NOT EXISTS vector WITH SCHEMA public;
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
