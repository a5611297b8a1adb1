"""The one thing pyproject.toml cannot say: the snapshot reader's optional C extension.

``vramscope/core/snapshot/_columns.c`` reads a PyTorch memory snapshot straight
into columns (core/snapshot/native.py). It is optional: where it cannot be built
(no C compiler), the install goes on and the pure-Python reader is used instead
(``vramscope snapshot`` says so).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "vramscope.core.snapshot._columns",
            ["app/vramscope/core/snapshot/_columns.c"],
            optional=True,
        )
    ]
)
