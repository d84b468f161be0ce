"""AST -> design model: imports, names, templates, units, evaluation and checks."""
