"""Every sample true at its instant, in every loop (the oracle of tests/agent/oracle.py).

Each loop trains tiny CPU models under CUDA allocator semantics while the
agent samples on its own thread at its fastest interval (the interpreter
switches threads every 100 us, so samples land anywhere: mid-backward, inside
``zero_grad``, inside the optimizer's first step) and the training thread
takes samples at its hooks. Every sample is compared with the oracle's truth
at its own allocator reading: 0 wrong samples, n/a only with a reason.
"""

from __future__ import annotations

import sys

import pytest
import torch
from torch.utils.checkpoint import checkpoint

from vramscope.agent import MIN_INTERVAL

from tests.agent.oracle import Oracle, pause, second_met
from tests.agent.tensors.test_instant_buckets import mlp_bn


class Run:
    def __init__(self, make_agent, discover=False):
        self.oracle = Oracle()
        self._make = make_agent
        self._discover = discover
        self.agent = None

    def start(self, *models, optimizers=(), register=(), register_opts=(), known=None):
        """The oracle knows every model trained; the agent only ``register``/``register_opts``
        (``known``: see Oracle.trains)."""
        self.oracle.trains(*models, optimizers=optimizers, known=known)
        self.agent = a = self._make(self.oracle, interval=MIN_INTERVAL, discover=self._discover)
        self.oracle.watch(a)
        for m in register:
            a.watch(model=m)
        for o in register_opts:
            a.watch(optimizer=o)
        a.start()
        assert a.wait_started(5)
        return a

    def registered(self, make_opt=torch.optim.AdamW, register=True):
        """A model and its optimizer, both registered (``register=False``: neither, as
        under ``vramscope run``: the agent learns of them at the first step)."""
        model = mlp_bn(128)
        opt = make_opt(model.parameters())
        if register:
            self.start(model, optimizers=[opt], register=[model], register_opts=[opt])
        else:
            self.start(model, optimizers=[opt], known=lambda walked: walked["optimizers"] >= 1)
        return model, opt

    def __enter__(self):
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(1e-4)
        self.oracle.live.__enter__()
        return self

    def __exit__(self, *exc):
        self.oracle.live.__exit__(*exc)
        sys.setswitchinterval(self._switch)
        if exc[0] is None:
            self.agent.sample_once()  # after training, on this thread
            self.agent.stop()

    def check(self, min_samples=4, min_known=1):
        o = self.oracle
        assert not o.wrong, o.summary()
        assert len(o.results) >= min_samples, o.summary()
        assert o.known() >= min_known, o.summary()


def train(model, opt, steps=40, set_to_none=True, micro=1, forward=None, x=None):
    forward = forward or (lambda x: model(x))
    losses = []
    for i in range(steps):
        opt.zero_grad(set_to_none=set_to_none)
        pause()
        for _ in range(micro):
            loss = forward(torch.randn(16, 64) if x is None else x).square().mean()
            pause(0.001)
            loss.backward()
            losses.append(loss.item())
            del loss
        pause(0.001)
        opt.step()
        pause(0.002)
    return losses


@pytest.mark.slow
@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("optim", ["adamw", "sgd"])
def test_adamw_and_sgd(make_agent, set_to_none, optim):
    with Run(make_agent) as run:
        model, opt = run.registered(
            torch.optim.AdamW if optim == "adamw" else lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9)
        )
        train(model, opt, set_to_none=set_to_none)
    run.check()


@pytest.mark.slow
def test_gradient_accumulation(make_agent):
    with Run(make_agent) as run:
        model, opt = run.registered()
        train(model, opt, steps=20, micro=3)
    run.check()


@pytest.mark.slow
def test_amp_grad_scaler_skipping_steps(make_agent):
    with Run(make_agent) as run:
        model = mlp_bn(128)
        opt = torch.optim.AdamW(model.parameters())
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8)
        run.start(model, optimizers=[opt], register=[model], register_opts=[opt])
        skipped = 0
        for i in range(30):
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(torch.randn(16, 64)).float().square().mean()
            if i % 4 == 1:
                loss = loss * float("inf")  # an overflow: the scaler skips this step
            pause(0.001)
            scaler.scale(loss).backward()
            del loss
            pause(0.001)
            before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            skipped += scaler.get_scale() < before
            pause(0.002)
    assert skipped >= 5
    run.check()


@pytest.mark.slow
def test_gan_with_only_the_generator_registered(make_agent):
    with Run(make_agent, discover=True) as run:
        gen = mlp_bn(128)
        disc = torch.nn.Sequential(
            torch.nn.Linear(8, 64), torch.nn.BatchNorm1d(64), torch.nn.ReLU(), torch.nn.Linear(64, 1)
        )
        opt_g, opt_d = torch.optim.Adam(gen.parameters()), torch.optim.Adam(disc.parameters())
        run.start(gen, optimizers=[opt_g], register=[gen], register_opts=[opt_g])
        # the discriminator: known to the agent from its optimizer's first step
        run.oracle.trains(disc, optimizers=[opt_d], known=second_met)
        for _ in range(30):
            fake = gen(torch.randn(16, 64))
            opt_d.zero_grad()
            d_loss = disc(fake.detach()).mean() - disc(torch.randn(16, 8)).mean()
            pause(0.001)
            d_loss.backward()
            del d_loss
            opt_d.step()
            pause(0.002)
            opt_g.zero_grad()
            g_loss = -disc(fake).mean()
            del fake
            g_loss.backward()
            del g_loss
            pause(0.001)
            opt_g.step()
            pause(0.002)
        agent = run.agent
    run.check()
    assert any(m is disc for m in agent.models())  # found at its forward, buffers as weights


@pytest.mark.slow
def test_a_head_with_its_own_optimizer_stepping_right_after_the_first_is_discovered(make_agent):
    """Under ``vramscope run`` (nothing registered): a head called on its own, whose
    optimizer steps right after the first model's in each iteration, joins late. Its
    optimizer re-arms discovery at the first model's step boundary; the head's step
    follows at once, before any forward -- that step must not end discovery (it did: the
    head's weights read n/a for the whole run), the next iteration's forwards find it."""
    with Run(make_agent, discover=True) as run:
        first, opt1 = run.registered(register=False)
        train(first, opt1, steps=20)
        head = mlp_bn(64)
        opt2 = torch.optim.SGD(head.parameters(), lr=0.01, momentum=0.9)
        run.oracle.trains(head, optimizers=[opt2], known=second_met)
        found_at = None
        for i in range(150):
            x = torch.randn(16, 64)
            loss = first(x).square().mean() + head(x).square().mean()
            loss.backward()
            del loss
            pause(0.002)
            opt1.step()
            opt1.zero_grad()
            opt2.step()
            opt2.zero_grad()
            if any(m is head for m in run.agent.models()):
                found_at = i
                break
        for _ in range(5):
            train(first, opt1, steps=1)
        agent = run.agent
    run.check()
    assert found_at is not None, "the head was never discovered"
    assert any(m is head for m in agent.models())


def test_two_models_trained_in_turn_discovered(make_agent):
    with Run(make_agent, discover=True) as run:
        first, opt1 = run.registered(register=False)
        train(first, opt1, steps=20)
        second = mlp_bn(96)
        opt2 = torch.optim.SGD(second.parameters(), lr=0.01, momentum=0.9)
        run.oracle.trains(second, optimizers=[opt2], known=second_met)
        train(second, opt2, steps=10)
        # found a few agent intervals after the first model's last step (a quiet stretch
        # running then ends once its optimizer is idle: agent/steps/stretch.py): ~15 steps here,
        # more on a loaded machine
        for _ in range(140):
            if any(m is second for m in run.agent.models()):
                break
            train(second, opt2, steps=1)
        agent = run.agent
    run.check()
    assert any(m is second for m in agent.models())


@pytest.mark.slow
def test_model_forward_called_directly(make_agent):
    with Run(make_agent) as run:
        model, opt = run.registered()
        train(model, opt, forward=lambda x: model.forward(x))
    run.check()


class Growing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = mlp_bn(128)
        self.extra = None

    def forward(self, x):
        h = self.body(x)
        return h if self.extra is None else self.extra(h)


@pytest.mark.slow
def test_late_parameter_groups(make_agent):
    with Run(make_agent) as run:
        model = Growing()
        opt = torch.optim.AdamW(model.parameters())
        run.start(model, optimizers=[opt], register=[model], register_opts=[opt])
        train(model, opt, steps=15)
        model.extra = torch.nn.Linear(8, 256)
        opt.add_param_group({"params": list(model.extra.parameters())})
        run.oracle.rehook()
        train(model, opt, steps=25)
    run.check()


class LoRA(torch.nn.Module):
    def __init__(self, base: torch.nn.Linear, rank=4):
        super().__init__()
        self.base = base
        self.a = torch.nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
        self.b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

    def forward(self, x):
        return self.base(x) + x @ self.a.t() @ self.b.t()


@pytest.mark.slow
def test_lora_injected_late(make_agent):
    with Run(make_agent, discover=True) as run:
        model, opt = run.registered(register=False)
        train(model, opt, steps=15)
        before = sum(1 for _ in model.parameters())
        for p in model.parameters():
            p.requires_grad_(False)
        lora = LoRA(model[3])
        lora_opt = torch.optim.AdamW([lora.a, lora.b])
        # the adapters (weights, gradients): known from the walk that finds them (the next
        # routine walk, or their optimizer's first step at the latest); their optimizer's state
        # once the agent has met that optimizer -- its first step makes the state before the
        # step's hook meets it, so a sample in between sees state of an optimizer it never met
        run.oracle.trains(
            optimizers=[lora_opt],
            first=True,
            known=lambda walked: walked["params"] > before and walked["optimizers"] > 1,
        )
        adapters = torch.nn.ParameterList([lora.a, lora.b])  # the same tensors, no optimizer
        run.oracle.trains(adapters, first=True, known=lambda walked: walked["params"] > before)
        model[3] = lora
        train(model, lora_opt, steps=25)
    run.check()


@pytest.mark.slow
def test_activation_checkpointing(make_agent):
    with Run(make_agent) as run:
        model, opt = run.registered()

        def forward(x):
            h = checkpoint(model[:3], x, use_reentrant=False)
            return checkpoint(model[3:], h, use_reentrant=False)

        train(model, opt, forward=forward)
    run.check()


@pytest.mark.slow
def test_only_the_optimizer_registered_buffers_not_in_activations(make_agent):
    """The model is known only through its optimizer (no discovery): its BatchNorm
    statistics cannot be told from activations, so that bucket says n/a with why."""
    with Run(make_agent) as run:
        model = mlp_bn(128)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        run.start(model, optimizers=[opt], register_opts=[opt])
        train(model, opt, steps=20)
        agent = run.agent
    assert agent.errors == 0
    run.check(min_known=0)
    assert all(
        got["weights"] is None and got["other_allocated"] is None and got["gradients"] is not None
        for got, _t, _th in run.oracle.results
        if _th == "training thread"
    )


@pytest.mark.slow
def test_dataloader_fork_workers(make_agent):
    data = torch.utils.data.TensorDataset(torch.randn(256, 64))
    with Run(make_agent) as run:
        model, opt = run.registered()
        loader = torch.utils.data.DataLoader(
            data, batch_size=16, num_workers=2, multiprocessing_context="fork"
        )
        for _ in range(2):
            for (x,) in loader:
                train(model, opt, steps=1, x=x)
    run.check()


@pytest.mark.slow
def test_hugging_face_trainer(make_agent, tmp_path):
    """transformers' Trainer makes its own optimizer and calls the model itself: the
    agent is started as ``vramscope run`` does (discovery), nothing registered."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate", minversion="1.1.0")  # (Trainer needs it)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0
    )
    ids = torch.randint(0, 64, (64, 16))
    data = [{"input_ids": row, "labels": row} for row in ids]
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=8,
        max_steps=16,
        logging_strategy="no",
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    with Run(make_agent, discover=True) as run:
        model = transformers.GPT2LMHeadModel(config)
        trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
        trainer.create_optimizer()
        run.start(model, optimizers=[trainer.optimizer], known=lambda walked: walked["optimizers"] >= 1)
        trainer.train()
    run.check()


@pytest.mark.slow
def test_hugging_face_model_discovered_with_checkpointing(make_agent):
    """A transformers model (a ModelOutput for output, gradient checkpointing on) in a
    plain loop, found by discovery: what the Trainer runs, without ``accelerate``."""
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        n_layer=2, n_head=2, n_embd=32, vocab_size=64, n_positions=32, bos_token_id=0, eos_token_id=0
    )
    with Run(make_agent, discover=True) as run:
        model = transformers.GPT2LMHeadModel(config)
        model.activation_checkpointing_enable()
        model.train()
        opt = torch.optim.AdamW(model.parameters())
        run.start(model, optimizers=[opt], known=lambda walked: walked["optimizers"] >= 1)
        for _ in range(12):
            ids = torch.randint(0, 64, (4, 16))
            loss = model(input_ids=ids, labels=ids, use_cache=False).loss
            pause(0.001)
            loss.backward()
            del loss
            opt.step()
            pause(0.002)
            opt.zero_grad()
            pause()
    run.check()
