"""The micro-batch and sequence length the agent measured at (agent/tensors/input_shape.py):
read from the watched model's training forwards, positional or keyword, never from
an evaluation; carried by every sample."""

from __future__ import annotations

import torch
from torch import nn

from vramscope.agent.tensors.input_shape import batch_and_seq


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.head = nn.Linear(8, 100)

    def forward(self, input_ids=None, attention_mask=None):
        return self.head(self.embed(input_ids))


def test_token_ids_by_keyword_give_batch_and_seq_and_evaluation_is_left_out(make_agent):
    a = make_agent()
    model = Tokens()
    a.watch(model=model)
    a.start()
    model(input_ids=torch.randint(0, 100, (3, 17)), attention_mask=torch.ones(3, 17))
    with torch.no_grad():
        model(input_ids=torch.randint(0, 100, (64, 5)))
    item = a.sample_once()
    assert item["input"]["batch"] == 3 and item["input"]["seq"] == 17
    assert item["input"]["output_bytes"] == 3 * 17 * 100 * 4  # the logits the loss will copy


def test_features_have_a_batch_but_no_sequence(make_agent):
    a = make_agent()
    model = nn.Sequential(nn.Linear(12, 4))
    a.watch(model=model)
    a.start()
    assert a.sample_once()["input"] is None  # no training forward yet: not known, not 0
    model(torch.randn(5, 12))
    assert a.sample_once()["input"]["batch"] == 5 and a.sample_once()["input"]["seq"] is None


def test_which_dimension_is_a_sequence():
    assert batch_and_seq(torch.zeros(2, 9, dtype=torch.long)) == (2, 9)  # token ids
    assert batch_and_seq(torch.zeros(2, 9, 4)) == (2, 9)  # embeddings per position
    assert batch_and_seq(torch.zeros(2, 9)) == (2, None)  # features
    assert batch_and_seq(torch.zeros(2, 3, 8, 8)) == (2, None)  # images
    assert batch_and_seq(torch.zeros(())) == (None, None)


def test_the_hooks_go_with_the_agent(make_agent):
    a = make_agent()
    model = nn.Linear(3, 3)
    a.watch(model=model)
    a.start()
    a.stop()
    assert not model._forward_pre_hooks and not model._forward_hooks
