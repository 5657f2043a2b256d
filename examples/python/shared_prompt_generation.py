"""Shared-prompt generation with a transformers model on Cascade-MLIR.

A batch of sequences shares one long prompt (a system prompt, few-shot
examples, parallel sampling) and each has its own short prefix after it. A
Llama-architecture model (random weights from its config, nothing is
downloaded) runs with the package's attention backend
(cascade_mlir.transformers_backend): the prompt is prefilled once into pages
every sequence reads, then each decode step is planned once and every layer's
attention is a two-level cascade (the prompt's pages read once for the whole
batch + each sequence's own pages). With --compare-sdpa the same model also
generates with transformers' `sdpa` attention, and the summary compares
tokens/s and the greedy tokens.

    python examples/python/shared_prompt_generation.py [--batch 64]
        [--prompt 8192] [--own 16] [--new-tokens 128] [--layers 16]
        [--dtype float16|bfloat16] [--bigram X] [--compare-sdpa] [--cuda-graph]
        [--cpu]

--bigram X gives the random weights a planted successor structure whose
greedy choices are as decisive as a trained model's (0: plain random
weights, whose near-uniform logits over 128K tokens flip under any rounding
difference; docs/python.md, "Greedy tokens with random weights").

--cpu runs a tiny model on the CPU (the runtime's float64 reference computes
the attention): the loop without a GPU, for a look at the API.
"""
import argparse
import sys
import time

import torch

from cascade_mlir import transformers_backend as tb


class Progress:
    """A one-line progress bar (tqdm when installed)."""

    def __init__(self, total, desc):
        try:
            from tqdm import tqdm
            self.bar = tqdm(total=total, desc=desc, unit="step", leave=True)
        except ImportError:
            self.bar = None
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.perf_counter()

    def __call__(self, _step):
        self.n += 1
        if self.bar is not None:
            self.bar.update(1)
            return
        width = 30
        done = int(width * self.n / self.total)
        rate = self.n / max(time.perf_counter() - self.t0, 1e-9)
        sys.stdout.write(f"\r{self.desc} [{'#' * done}{'.' * (width - done)}] "
                         f"{self.n}/{self.total} {rate:.1f} step/s")
        if self.n == self.total:
            sys.stdout.write("\n")
        sys.stdout.flush()

    def close(self):
        if self.bar is not None:
            self.bar.close()


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [line, "| " + " | ".join(str(h).ljust(w) for h, w in zip(header, widths)) + " |",
           line]
    for r in rows:
        out.append("| " + " | ".join(str(c).rjust(w) for c, w in zip(r, widths)) + " |")
    out.append(line)
    return "\n".join(out)


def accuracy(model, prompt, own, steps):
    """The cascade against sdpa over `steps` greedy steps
    (transformers_backend.greedy_agreement): free running, the identical
    steps per sequence; teacher forced (both fed sdpa's tokens), the logits'
    difference per step and every greedy choice that differs, with sdpa's
    top-1/top-2 gap there."""
    for line in tb.agreement_lines(tb.greedy_agreement(model, prompt, own, steps)):
        print(line)


def summary_row(name, res):
    steps = len(res.step_ms)
    step = sum(res.step_ms) / max(steps, 1)
    attn = sum(res.attention_ms) / len(res.attention_ms) if res.attention_ms else None
    return [name, f"{res.prefill_s:.2f}", f"{step:.2f}",
            "-" if attn is None else f"{attn:.2f}",
            "-" if attn is None else f"{step - attn:.2f}",
            f"{res.decode_tokens_per_s:,.0f}"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--prompt", type=int, default=8192, help="shared prompt tokens")
    ap.add_argument("--own", type=int, default=16, help="each sequence's own prefix tokens")
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    ap.add_argument("--compare-sdpa", action="store_true")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="capture the decode step once, replay it after each plan")
    ap.add_argument("--cpu", action="store_true", help="a tiny model on the CPU")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bigram", type=float, default=tb.CALIBRATED_BIGRAM,
                    help="planted successor strength (0: plain random weights)")
    args = ap.parse_args()
    dtype = getattr(torch, args.dtype)
    if args.cpu:
        device, cfg = torch.device("cpu"), tb.llama_config("tiny")
        args.batch, args.prompt = min(args.batch, 4), min(args.prompt, 64)
        args.new_tokens = min(args.new_tokens, 8)
    elif not torch.cuda.is_available():
        print("no CUDA device: run with --cpu for the CPU reference path")
        return 2
    else:
        device = torch.device("cuda:0")
        cfg = tb.llama_config("llama-32x8-d128", num_layers=args.layers)
    model = tb.random_model(cfg, dtype, device, seed=args.seed, bigram=args.bigram)
    g = torch.Generator().manual_seed(args.seed + 1)
    prompt = torch.randint(0, cfg.vocab_size, (args.prompt,), generator=g)
    own = torch.randint(0, cfg.vocab_size, (args.batch, args.own), generator=g)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    print(f"Llama-architecture model, random weights: {cfg.num_hidden_layers} layers, "
          f"{cfg.num_attention_heads}/{cfg.num_key_value_heads} heads of "
          f"{cfg.hidden_size // cfg.num_attention_heads}, {params:.2f} B parameters, "
          f"{args.dtype}, {device}, planted bigram {args.bigram}")
    print(f"batch {args.batch} sharing a {args.prompt}-token prompt, {args.own} own tokens "
          f"each, {args.new_tokens} new tokens")

    timed = device.type == "cuda"
    bar = Progress(args.new_tokens, "cascade_mlir")
    ours = tb.generate(model, prompt, own, args.new_tokens, time_attention=timed,
                       cuda_graph_decode=args.cuda_graph, progress=bar)
    bar.close()
    rows = [summary_row("cascade_mlir" + (" (CUDA graph)" if args.cuda_graph else ""),
                        ours)]
    if args.compare_sdpa:
        bar = Progress(args.new_tokens, "sdpa        ")
        ref = tb.generate_sdpa(model, prompt, own, args.new_tokens, time_attention=timed,
                               progress=bar)
        bar.close()
        rows.append(summary_row("transformers sdpa", ref))
    print()
    print(table(rows, ["attention", "prefill s", "step ms", "attention ms", "rest ms",
                       "tokens/s"]))
    if args.compare_sdpa:
        same = (ours.tokens == ref.tokens).all(0)
        first = int((~same).nonzero()[0]) if not bool(same.all()) else None
        speed = ours.decode_tokens_per_s / max(ref.decode_tokens_per_s, 1e-9)
        per_seq = (ours.tokens == ref.tokens).all(1)
        print(f"speed-up {speed:.2f}x; greedy tokens identical "
              + ("for every step" if first is None else f"for the first {first} steps")
              + f" of the whole batch; {int(per_seq.sum())}/{per_seq.numel()} sequences "
              f"identical over all {args.new_tokens} steps")
        accuracy(model, prompt, own, min(32, args.new_tokens))
    print("first sequence's tokens:", ours.tokens[0, :16].tolist())
    return 0


if __name__ == "__main__":
    sys.exit(main())
