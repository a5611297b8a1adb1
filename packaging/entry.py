"""Entry point of the PyInstaller bundle: the same `vramscope` command."""

from vramscope.cli import main

raise SystemExit(main())
