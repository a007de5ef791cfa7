"""Summaries for the graph stage: the extractive summarizer, the summarizer options and the RAPTOR tree
they summarize."""
