# SPDX-License-Identifier: MIT
"""Zoo: a transformers GPT-2 built from a config (no download), 10 AdamW
steps on random tokens."""
import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
cfg = GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=128)
model = GPT2LMHeadModel(cfg).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(10):
    ids = torch.randint(0, 1000, (8, 64), device="cuda")
    loss = model(ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("gpt2: 10 steps")
