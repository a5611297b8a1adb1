"""One FSDP2 rank (gloo, CPU), started by torchrun: a child for tests/agent/test_fsdp_ranks.py.

usage: torchrun --nproc_per_node 2 fsdp_train.py OUT_DIR STEPS [BATCH]
Each rank starts the agent in code, trains a fully_shard-ed MLP, and in the
middle of a forward (inside layer 1, its parameters all-gathered) takes a
sample on the training thread; it writes OUT_DIR/rank<N>.json with its pid,
that sample and its own independent counts: the local shards (weights,
gradients, optimizer state) and the bytes of the unsharded parameters alive
at that instant.
"""

import json
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard


def nbytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if s.nbytes() and s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


def local(t):
    return t.to_local() if hasattr(t, "to_local") else t


def modules_item(a):
    a.serving.drain()
    items = [json.loads(b) for b in a.ring.all_items()]
    found = [i for i in items if i.get("kind") == "modules"]
    return found[-1] if found else None


def main(out, steps, batch=8):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    width = 256
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)])
    for layer in model:
        fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.AdamW(model.parameters())
    from vramscope import agent

    a = agent.start(model=model, optimizer=opt, interval=0.05)
    seen = {}

    def inside(module, args, output):  # prepended: before FSDP reshards the layer
        if "sample" not in seen and len(seen) == 0 and step[0] == steps - 1:
            plain = [
                p for m in model.modules() for p in m.parameters(recurse=False) if not hasattr(p, "to_local")
            ]
            seen["unsharded"] = nbytes(plain)
            # a walk in the middle of the forward: the swapped-in copies are no weights
            a.registry.walk_due = True
            seen["sample"] = a.sample_once()

    step = [0]
    model[1].register_forward_hook(inside, prepend=True)
    a.module_sampler.next_step = steps - 1  # the last step's forward: per module
    for step[0] in range(steps):
        opt.zero_grad()
        model(torch.randn(batch, width)).square().mean().backward()
        opt.step()
    params = list(model.parameters())
    info = {
        "pid": os.getpid(),
        "rank": rank,
        "weights": nbytes([local(p) for p in params]),
        "gradients": nbytes([local(p.grad) for p in params if p.grad is not None]),
        "optimizer_state": nbytes(
            [local(v) for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
        ),
        "unsharded_in_forward": seen.get("unsharded"),
        "sample_in_forward": seen.get("sample"),
        "sample_after": a.sample_once(),
        # per layer, counted here: its local shards (weight + bias), their gradients and state
        "layers": {
            str(i): {
                "weights": nbytes([local(p) for p in layer.parameters()]),
                "gradients": nbytes([local(p.grad) for p in layer.parameters() if p.grad is not None]),
                "optimizer_state": nbytes(
                    [
                        local(v)
                        for p in layer.parameters()
                        for v in opt.state[p].values()
                        if torch.is_tensor(v)
                    ]
                ),
            }
            for i, layer in enumerate(model)
        },
        "modules": modules_item(a),
    }
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), *(int(a) for a in sys.argv[3:4]))
