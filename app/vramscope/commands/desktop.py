"""`vramscope desktop install|uninstall|show`: the desktop menu entry and icons
for the current user (the work is in vramscope.desktop_entry; no Qt)."""

from vramscope.desktop_entry import add_arguments, run

__all__ = ["add_arguments", "run"]
