"""vramscope: what fills your GPU, live."""

__version__ = "0.1.0"
