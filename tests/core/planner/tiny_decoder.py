"""A real (tiny) decoder in torch, built from a Hugging Face-style config dict
with the same module names and shapes as transformers' Llama/Qwen2 models,
so a plan from that config can be checked against measured tensors."""

from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight


class Attention(nn.Module):
    def __init__(self, cfg: dict, qkv_bias: bool):
        super().__init__()
        h, self.heads = cfg["hidden_size"], cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads", self.heads)
        self.head_dim = cfg.get("head_dim") or h // self.heads
        self.q_proj = nn.Linear(h, self.heads * self.head_dim, bias=qkv_bias)
        self.k_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=qkv_bias)
        self.v_proj = nn.Linear(h, self.kv_heads * self.head_dim, bias=qkv_bias)
        self.o_proj = nn.Linear(self.heads * self.head_dim, h, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        out = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, -1))


class MLP(nn.Module):
    def __init__(self, h: int, inter: int):
        super().__init__()
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, cfg: dict, qkv_bias: bool):
        super().__init__()
        h = cfg["hidden_size"]
        self.self_attn = Attention(cfg, qkv_bias)
        self.mlp = MLP(h, cfg["intermediate_size"])
        self.input_layernorm = RMSNorm(h)
        self.post_attention_layernorm = RMSNorm(h)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class TinyDecoder(nn.Module):
    def __init__(self, cfg: dict):
        super().__init__()
        h, vocab = cfg["hidden_size"], cfg["vocab_size"]
        qkv_bias = cfg["model_type"] == "qwen2"
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList(Layer(cfg, qkv_bias) for _ in range(cfg["num_hidden_layers"]))
        self.norm = RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)
        if cfg.get("tie_word_embeddings", False):
            self.lm_head.weight = self.embed_tokens.weight

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


class LoRALinear(nn.Module):
    """PEFT-style LoRA: frozen base + A (r x in) and B (out x r)."""

    def __init__(self, base: nn.Linear, rank: int):
        super().__init__()
        self.base = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x))


def add_lora(model: TinyDecoder, rank: int, modules: tuple[str, ...]) -> list[nn.Parameter]:
    for p in model.parameters():
        p.requires_grad_(False)
    for layer in model.layers:
        for name in modules:
            setattr(layer.self_attn, name, LoRALinear(getattr(layer.self_attn, name), rank))
    return [p for n, p in model.named_parameters() if "lora_" in n]


def train_step(model, optimizer, vocab: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (2, 8), generator=g)
    logits = model(ids[:, :-1])
    loss = nn.functional.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
    loss.backward()
    optimizer.step()
