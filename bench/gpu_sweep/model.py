"""A Llama-shaped decoder with fixed random weights, and greedy decoding with
and without assisted (speculative) decoding, in plain PyTorch.

The target is the whole model; the draft is its own first `draft_layers`
layers with the same final norm and head (self-speculative decoding, as in
LayerSkip). Both share one KV cache: the draft's layers are the target's first
layers, so what the draft writes for a token is what the target writes for it,
and the verification pass overwrites the draft's positions anyway.

Decoding is greedy: the tokens produced with k draft tokens are the tokens the
target alone produces, up to bf16 rounding (`matches_greedy` says whether they
were, on a short run).
With random weights the draft rarely guesses the target's next token, so
speculation is expected to be slower than the baseline; the point is a real
GPU workload of the seeds' shape, not a fast decoder.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class Shape:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    draft_layers: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    def parameters(self) -> int:
        per_layer = (
            self.hidden * (self.heads + 2 * self.kv_heads) * self.head_dim
            + self.heads * self.head_dim * self.hidden
            + 3 * self.hidden * self.intermediate
            + 2 * self.hidden
        )
        return self.layers * per_layer + 2 * self.vocab * self.hidden + self.hidden


SHAPES = {
    # TinyLlama-1.1B's shape: 22 layers, 2048 wide, grouped-query attention (32 heads, 4 KV heads).
    "1b": Shape(hidden=2048, layers=22, heads=32, kv_heads=4, intermediate=5632, vocab=32000, draft_layers=2),
    # For a CPU check of the whole path: the same code, a few thousand parameters.
    "tiny": Shape(hidden=64, layers=4, heads=4, kv_heads=2, intermediate=128, vocab=256, draft_layers=1),
}


class Decoder:
    def __init__(self, shape: Shape, device: str, dtype: torch.dtype, max_len: int, seed: int = 0) -> None:
        self.shape, self.device, self.dtype, self.max_len = shape, device, dtype, max_len
        g = torch.Generator(device=device).manual_seed(seed)

        def w(*size: int, std: float = 0.02) -> torch.Tensor:
            return (torch.randn(*size, generator=g, device=device, dtype=torch.float32) * std).to(dtype)

        s, hd = shape, shape.head_dim
        self.embed = w(s.vocab, s.hidden, std=1.0)
        self.wqkv = [w(s.hidden, (s.heads + 2 * s.kv_heads) * hd) for _ in range(s.layers)]
        self.wo = [w(s.heads * hd, s.hidden) for _ in range(s.layers)]
        self.wgu = [w(s.hidden, 2 * s.intermediate) for _ in range(s.layers)]
        self.wdown = [w(s.intermediate, s.hidden) for _ in range(s.layers)]
        self.norms = torch.ones(2 * s.layers + 1, s.hidden, device=device, dtype=dtype)
        self.head = w(s.hidden, s.vocab)
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=device, dtype=torch.float32) / hd))
        angles = torch.outer(torch.arange(max_len, device=device, dtype=torch.float32), inv)
        self.cos, self.sin = angles.cos().to(dtype), angles.sin().to(dtype)
        self.k_cache = torch.zeros(s.layers, s.kv_heads, max_len, hd, device=device, dtype=dtype)
        self.v_cache = torch.zeros_like(self.k_cache)

    def _rope(self, x: torch.Tensor, pos: int) -> torch.Tensor:
        # x: [T, heads, hd]; rotate the two halves
        t = x.shape[0]
        cos, sin = self.cos[pos : pos + t, None, :], self.sin[pos : pos + t, None, :]
        a, b = x[..., ::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)

    @staticmethod
    def _norm(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), weight, 1e-5)

    def forward(self, tokens: torch.Tensor, pos: int, layers: int | None = None) -> torch.Tensor:
        """Logits for `tokens` at positions pos.. (their K/V written into the cache),
        through the first `layers` layers (all by default), the final norm and the head."""
        s, hd = self.shape, self.shape.head_dim
        n = s.layers if layers is None else layers
        t = tokens.shape[0]
        end = pos + t
        mask = None
        if t > 1:
            rows = torch.arange(t, device=self.device)[:, None] + pos
            mask = torch.arange(end, device=self.device)[None, :] <= rows
        x = self.embed[tokens]
        for layer in range(n):
            h = self._norm(x, self.norms[2 * layer])
            qkv = h @ self.wqkv[layer]
            q, k, v = qkv.split([s.heads * hd, s.kv_heads * hd, s.kv_heads * hd], dim=-1)
            q = self._rope(q.view(t, s.heads, hd), pos)
            k = self._rope(k.view(t, s.kv_heads, hd), pos)
            self.k_cache[layer, :, pos:end] = k.transpose(0, 1)
            self.v_cache[layer, :, pos:end] = v.view(t, s.kv_heads, hd).transpose(0, 1)
            att = F.scaled_dot_product_attention(
                q.transpose(0, 1)[None],
                self.k_cache[layer, :, :end][None],
                self.v_cache[layer, :, :end][None],
                attn_mask=mask,
                enable_gqa=True,
            )
            x = x + att[0].transpose(0, 1).reshape(t, s.heads * hd) @ self.wo[layer]
            h = self._norm(x, self.norms[2 * layer + 1])
            gate, up = (h @ self.wgu[layer]).chunk(2, dim=-1)
            x = x + (F.silu(gate) * up) @ self.wdown[layer]
        return self._norm(x, self.norms[-1]) @ self.head

    @torch.inference_mode()
    def generate(self, prompt: torch.Tensor, new_tokens: int, k: int) -> tuple[list[int], dict[str, float]]:
        """Greedy decoding of `new_tokens` tokens; with `k` > 0 draft tokens a round,
        assisted by the first layers. Returns the tokens and the timing."""
        sync = torch.cuda.synchronize if self.device.startswith("cuda") else (lambda: None)
        sync()
        start = time.perf_counter()
        logits = self.forward(prompt, 0)
        length = prompt.shape[0]
        nxt = logits[-1].argmax().view(1)
        produced = [nxt]
        count, rounds, accepted = 1, 0, 0
        while count < new_tokens:
            if k == 0:
                nxt = self.forward(nxt, length)[-1].argmax().view(1)
                length += 1
                produced.append(nxt)
                count += 1
                continue
            drafts, cur = [], nxt
            for i in range(k):
                cur = self.forward(cur, length + i, self.shape.draft_layers)[-1].argmax().view(1)
                drafts.append(cur)
            seq = torch.cat([nxt, *drafts])
            targets = self.forward(seq, length).argmax(dim=-1)
            m = int(torch.cumprod((seq[1:] == targets[:-1]).int(), 0).sum().item())
            produced.extend(drafts[:m])
            nxt = targets[m].view(1)
            produced.append(nxt)
            length += m + 1
            count += m + 1
            rounds += 1
            accepted += m
        sync()
        seconds = time.perf_counter() - start
        tokens = torch.cat(produced)[:new_tokens].tolist()
        stats = {
            "seconds": seconds,
            "tok_s": new_tokens / seconds,
            "accept_len": (accepted + rounds) / rounds if rounds else 1.0,
            "draft_acceptance": accepted / (rounds * k) if rounds and k else 0.0,
        }
        return tokens, stats


def matches_greedy(model: Decoder, prompt: torch.Tensor, k: int, n: int = 24) -> bool:
    """Does assisted decoding produce the target's own greedy tokens? (In bf16 a near
    tie can come out the other way between a one-token and a k+1-token pass: reported,
    not hidden.)"""
    base, _ = model.generate(prompt, n, 0)
    assisted, _ = model.generate(prompt, n, k)
    return base == assisted
