"""The agent's side of the wire (stdlib only, no torch): where agents listen and who a
process is (`paths.py`), the per-user Unix socket (`server.py`), the agent thread's loop
and events queue (`serving.py`), what it answers a monitor (`requests.py`), its bounded
history (`ring.py`) and the final dump at exit (`lastwords.py`). The monitor imports
`paths` without torch.
"""
