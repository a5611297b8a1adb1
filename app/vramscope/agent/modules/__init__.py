"""The per-module breakdown (stdlib + torch): the weights, gradients and optimizer state
each module owns (`module_params.py`), the activations one forward saved for backward
(`module_saved.py`), the forward hooks on registered models (`model_hooks.py`) and when
to measure and what is sent (`module_sampler.py`).
"""
