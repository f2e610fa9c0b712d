"""Task sets: where tasks come from, and the hidden checks of their answers."""
