"""`lanegraph serve`: find and working memory over HTTP and MCP, for applications and agents."""
