# SPDX-License-Identifier: MIT
"""An eager decode loop: a 6-layer, 512-wide decoder generating one token
at a time with a static KV cache, each token's forward launched kernel by
kernel (the GPU idles between small kernels). A step is one token.
Fix: the token's forward captured in a CUDA graph (static cache, static
position) and replayed per token: what torch.compile(mode="reduce-overhead")
or generate's static cache does."""
import math

import torch

from common import args, timed, torch_sync

a = args(steps=200, warmup=10)
dev = torch.device("cuda")
torch.manual_seed(0)
L, D, H, T, V, B = 6, 512, 8, 512, 8192, 4
Wqkv = [torch.randn(D, 3 * D, device=dev) / math.sqrt(D) for _ in range(L)]
Wo = [torch.randn(D, D, device=dev) / math.sqrt(D) for _ in range(L)]
W1 = [torch.randn(D, 4 * D, device=dev) / math.sqrt(D) for _ in range(L)]
W2 = [torch.randn(4 * D, D, device=dev) / math.sqrt(4 * D) for _ in range(L)]
emb = torch.randn(V, D, device=dev)
K = torch.zeros(L, B, H, T, D // H, device=dev)
Vc = torch.zeros(L, B, H, T, D // H, device=dev)
tok = torch.zeros(B, dtype=torch.long, device=dev)
pos = torch.zeros(1, dtype=torch.long, device=dev)
ar = torch.arange(T, device=dev)


def forward():
    x = emb[tok]
    for l in range(L):
        h = torch.nn.functional.layer_norm(x, (D,))
        q, k, v = (h @ Wqkv[l]).view(B, 3, H, D // H).unbind(1)
        K[l].index_copy_(2, pos, k.unsqueeze(2))
        Vc[l].index_copy_(2, pos, v.unsqueeze(2))
        s = torch.einsum("bhd,bhtd->bht", q, K[l]) / math.sqrt(D // H)
        s = s.masked_fill(ar > pos, float("-inf"))
        x = x + (torch.einsum("bht,bhtd->bhd", s.softmax(-1), Vc[l]).reshape(B, D) @ Wo[l])
        x = x + torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, (D,)) @ W1[l]) @ W2[l]
    nxt = (x @ emb.t()).argmax(-1)
    tok.copy_(nxt)
    pos.add_(1)
    pos.remainder_(T)


if a.fix:
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            forward()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        forward()
    timed(lambda i: g.replay(), a, torch_sync)
else:
    timed(lambda i: forward(), a, torch_sync)
