"""``python -m rubric_runner``: the Hydra app."""

from .cli import main

if __name__ == "__main__":
    main()
