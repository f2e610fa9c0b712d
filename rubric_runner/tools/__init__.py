"""Evidence tools: the registry that finds them by name, and the built-in ones."""
