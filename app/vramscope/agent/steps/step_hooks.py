"""The step tracker's place in PyTorch's optimizer hook dicts (agent/steps/steps.py).

One global step post-hook, registered once; one global step pre-hook whose
entry in PyTorch's dict comes and goes with what the next step needs; and the
per-step hooks a quiet step does not need taken out and put back (``hush``).
"""

from __future__ import annotations


class StepHooks:
    """Mixed into StepTracker (agent/steps/steps.py), whose ``__init__`` sets the state used here."""

    def install(self) -> None:
        if self._hook_handle is not None:
            return
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._hook_handle = register_optimizer_step_post_hook(self._optimizer_hook)
        self.place_pre_hook()

    def _pre_wanted(self) -> bool:
        phases = self._phases
        return self._hook_handle is not None and (
            self.pre_every_step or (phases is not None and phases.enabled)
        )

    def place_pre_hook(self) -> None:
        """Training thread, between steps (never inside the optimizer's pre-hook loop):
        the pre-hook where the next step needs it, out where it does not. Registered
        once; then its entry in PyTorch's hook dict comes and goes (a dict item, where
        a registration and a handle's removal cost ~15 us each on a cold step)."""
        want = self._pre_wanted()
        if want == self._pre_on:
            return
        handle = self._pre_handle
        if handle is None:
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            handle = self._pre_handle = register_optimizer_step_pre_hook(self._optimizer_pre_hook)
            self._pre_on = True
            if want:
                return
        hooks = handle.hooks_dict_ref()
        if hooks is None:
            return
        if want:
            hooks[handle.id] = self._optimizer_pre_hook
        else:
            hooks.pop(handle.id, None)
        self._pre_on = want

    def hush(self, quiet: bool) -> None:
        """Quiet steps ahead (True): the per-step hooks they do not need leave PyTorch's
        hook dicts -- the optimizer pre-hook (unless every step needs it: no model's
        forward hook), the models' forward post-hooks; False: back for a full step. The
        backward watch's node hooks stay: they mark the gradient ledger stale before
        each backward's first gradient (agent/tensors/backward.py)."""
        if quiet == self._hushed:
            return
        self._hushed = quiet
        try:
            if self.on_quiet is not None:
                self.on_quiet(quiet)
            self.place_pre_hook()
        except Exception:
            self.errors += 1

    def uninstall(self) -> None:
        self.end_stretch_here()
        self.stretch.drop_tally()
        self.stretch.drop_known()
        if self._hook_handle is not None:
            self._hook_handle.remove()
            self._hook_handle = None
        if self._pre_handle is not None:
            self._pre_handle.remove()
            self._pre_handle = None
            self._pre_on = False
        if self._hushed:
            self.hush(False)
