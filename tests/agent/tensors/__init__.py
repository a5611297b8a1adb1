"""Tests of agent/tensors/: weights, gradients, optimizer state at an instant; gradients unseen, moved models, sharded runs, the input's shape."""
