"""Training steps on the training thread, cheaply (stdlib + torch): steps counted from
optimizer hooks or `agent.step()` (`steps.py`, its place in PyTorch's hook dicts
`step_hooks.py`), quiet stretches counted in C (`stretch.py`, `step_stretches.py`),
allocated after each step (`after_step.py`), the phases of a step (`phases.py`) and who
takes a sample, agent thread or training thread (`handoff.py`).
"""
