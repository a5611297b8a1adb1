"""One DDP rank (gloo, CPU), started by torchrun: a child for tests/agent/test_ddp_run.py
under ``vramscope run``.

usage: torchrun --nproc_per_node 2 ddp_train.py OUT_DIR STEPS
Each rank writes OUT_DIR/rank<N>.json with its pid and its real tensor sizes at the end.
"""

import json
import os
import sys

import torch
import torch.distributed as dist


def nbytes(tensors):
    seen, total = set(), 0
    for t in tensors:
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


def rank_main(out, steps):
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(
        torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(), torch.nn.Linear(64, 4)
        )
    )
    opt = torch.optim.AdamW(model.parameters())
    for _ in range(steps):
        opt.zero_grad()
        model(torch.randn(16, 32)).square().mean().backward()
        opt.step()
    params = list(model.parameters())
    info = {
        "pid": os.getpid(),
        "weights": nbytes(params + list(model.buffers())),
        "gradients": nbytes([p.grad for p in params if p.grad is not None]),
        "optimizer_state": nbytes([v for s in opt.state.values() for v in s.values()]),
    }
    with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
        json.dump(info, f)
    dist.destroy_process_group()
    return model, opt


if __name__ == "__main__":
    model, opt = rank_main(sys.argv[1], int(sys.argv[2]))  # alive until the end, as in most scripts
