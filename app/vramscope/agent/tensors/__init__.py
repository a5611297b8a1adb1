"""Whose tensors count, in bytes, per device (stdlib + torch): the models and optimizers
watched and the walk that finds their tensors (`registry.py`, `model_info.py`),
weights, gradients and optimizer state at an instant (`buckets.py`, `grads.py`,
`instant.py`), gradients of parameters not met yet and the backward that makes them
(`unseen_grads.py`, `backward.py`), sharded and data-parallel runs per rank
(`sharded.py`) and the input shape a run is measured at (`input_shape.py`).
"""
