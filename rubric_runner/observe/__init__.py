"""What a run shows and leaves while it goes: events, the recorder, the console, tracing."""
