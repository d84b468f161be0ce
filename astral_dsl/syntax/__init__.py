"""Source text -> AST with spans."""
