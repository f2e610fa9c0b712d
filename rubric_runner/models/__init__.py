"""Chat models from config: providers, the scripted model, the response cache, server quirks."""
