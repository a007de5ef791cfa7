"""Working memory (asset group "session"): session items, and their promotion to documents."""
