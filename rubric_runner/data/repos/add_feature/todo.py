"""A to-do list."""


class TodoList:
    """To-dos by title, each done or not, in the order they were added."""

    def __init__(self):
        self._items = []  # [title, done] pairs

    def add(self, title):
        """Add a to-do; its title must not be blank."""
        if not title.strip():
            raise ValueError("a to-do needs a title")
        self._items.append([title, False])

    def done(self, title):
        """Mark the first to-do called ``title`` done."""
        for item in self._items:
            if item[0] == title and not item[1]:
                item[1] = True
                return
        raise KeyError(title)
