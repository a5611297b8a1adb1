"""Start-up hook for ``vramscope run`` (this directory is put first on PYTHONPATH).

In a process started with VRAMSCOPE_AGENT=1 it waits for ``import torch``
and then starts the vramscope agent -- no code change in the script, and no
torch import forced on Python processes that never use it. Launchers
(torchrun) and multiprocessing helper processes (DataLoader workers under
spawn/forkserver) are left alone; each torchrun rank gets its own agent, and
so does each rank of ``torch.multiprocessing.spawn``: in a spawned child the
agent starts when torch's rank entry point (``torch.multiprocessing.spawn._wrap``,
the target every rank process runs) is called, which a plain helper never is.

Any other ``sitecustomize`` module on the path (a distribution's, a
virtualenv's) still runs: it is looked up past this directory and executed
in our place.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain_next_sitecustomize():
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        import traceback

        print("Error in the chained sitecustomize; traceback follows:", file=sys.stderr)
        traceback.print_exc()


SPAWN_RANK = "spawn rank"  # (_should_arm: a spawned child, armed for torch's rank entry point)
RANK_MODULE = "torch.multiprocessing.spawn"  # its ``_wrap`` runs each rank of mp.spawn


def _should_arm():
    if os.environ.get("VRAMSCOPE_AGENT") != "1":
        return False
    argv = list(getattr(sys, "orig_argv", None) or sys.argv)
    joined = " ".join(argv)
    if "multiprocessing" in joined and ("forkserver" in joined or "resource_tracker" in joined):
        return False
    if "multiprocessing" in joined and "spawn_main" in joined:
        return SPAWN_RANK
    if "torch.distributed.run" in joined or "torch.distributed.launch" in joined:
        return False
    if any(os.path.basename(a) == "torchrun" for a in argv[:2]):
        return False
    return True


def _start_agent():
    try:
        try:
            import vramscope.agent as agent
        except ImportError:
            extra = os.environ.get("VRAMSCOPE_AGENT_PATH")
            if not extra:
                raise
            sys.path.append(extra)  # last: the script's own packages win
            try:
                import vramscope.agent as agent
            finally:
                if extra in sys.path:
                    sys.path.remove(extra)
        try:
            interval = float(os.environ.get("VRAMSCOPE_AGENT_INTERVAL", "0.5"))
        except ValueError:
            interval = 0.5
        agent.start(interval=interval)
    except Exception as exc:
        print(
            f"vramscope: the agent did not start ({type(exc).__name__}: {exc}); the script runs without it",
            file=sys.stderr,
        )


def _start_in_rank():
    """In a spawned child, after ``import torch``: start the agent when the child turns
    out to be an mp.spawn rank (its target, unpickled after this, is ``_wrap``)."""
    module = sys.modules.get(RANK_MODULE)
    original = getattr(module, "_wrap", None)
    if original is None:
        return

    def _wrap(*args, **kwargs):
        _start_agent()
        return original(*args, **kwargs)

    module._wrap = _wrap


class _AfterTorchImport:
    """A meta-path finder that only wraps torch's loader to start the agent after it ran."""

    def __init__(self, then=None):
        self._then = then or _start_agent  # what runs once torch is imported

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        spec = None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module

        then = self._then

        def exec_module(module):
            original(module)
            then()

        loader.exec_module = exec_module
        return spec


if _HERE in (os.path.abspath(p or os.curdir) for p in sys.path):
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
_ARM = _should_arm()
if _ARM:
    _then = _start_in_rank if _ARM == SPAWN_RANK else _start_agent
    if "torch" in sys.modules:
        _then()
    else:
        sys.meta_path.insert(0, _AfterTorchImport(_then))
_chain_next_sitecustomize()
