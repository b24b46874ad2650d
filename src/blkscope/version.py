"""blkscope's version, in a module of its own: every layer can import it without reaching up to
the package (the same number as pyproject.toml's, which tests/project/test_layers.py holds together)."""

__version__ = "0.1.0"
