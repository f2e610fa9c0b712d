"""The config: its schema, composing it with Hydra, and checking it."""
