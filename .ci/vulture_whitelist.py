"""What a dead-code scan (vulture) reports that is used, by name, where it cannot see.

    vulture app/vramscope tests bench .ci/vulture_whitelist.py --min-confidence 60

Each entry is used dynamically: a module ``__getattr__`` (lazy names), a callback's
parameter its caller passes by position, a method Python or Qt calls, a reference
kept so Qt does not drop a shown menu or dialog, a TypedDict's keys (read on the
wire), a data field carried for the views and sessions.
"""

# ruff: noqa
from vramscope.agent import protocol
from vramscope.core.samples import AgentDevice
from vramscope.sources.agents.agent_input import Hello

__getattr__  # agent/__init__.py, core/detectors/__init__.py, ui/qt/theme.py: lazy module names
grad_outputs  # agent/tensors/backward.py: torch's hook signature
device_allocated  # agent/core.py: the allocator's OOM observer signature
protocol.HelloReply.agent_version, protocol.DeviceFigures.free_count, protocol.DeviceFigures.buckets_note
protocol.StepDevice.allocated_after
AgentDevice.free_count, Hello.agent_version  # decoded and carried
readinto, makefile  # core/safe_io/bounded_http.py: io.RawIOBase / socket API that http.client calls
text_factory  # core/session/reader.py: sqlite3.Connection reads it
headerData  # ui/processes/process_model.py: QAbstractTableModel
column_menu, context_menu, shortcut_actions, settings_dialog, about_dialog, shortcuts_box  # kept alive for Qt
