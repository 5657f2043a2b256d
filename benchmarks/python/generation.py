"""Shared-prompt generation, end to end: a Llama-architecture model (random
weights; 32/8 heads of 128, hidden 4096, 16 layers unless --layers) with the
package's attention backend (cascade_mlir.transformers_backend: one prompt
prefill into shared pages, then per step one plan and a two-level cascade per
layer) against the same model with transformers' `sdpa` attention and its
DynamicCache (the prompt prefilled once and repeated for the batch), both
eager. For every (batch, prompt length): decode tokens/s, the step split into
attention (CUDA events around every attention call) and the rest, and whether
the greedy tokens agree; then the plot (tokens/s against batch size and
against prompt length).

Correctness at the done-when shape (batch 64, an 8192-token prompt), fp16
and bf16, on the model with a planted bigram (--bigram, calibrated to a
trained model's decisiveness: docs/python.md, "Greedy tokens with random
weights") and on plain random weights (transformers_backend.greedy_agreement):
free-running identical steps per sequence (min / median; the criterion: the
whole batch identical for the first 32 steps), and teacher forced (both fed
sdpa's tokens) the logits' max|diff| / max|logit| per step and every greedy
choice that differs, with sdpa's top-1/top-2 gap there. The exit status
fails when the logits differ by more than 1e-2 (fp16) / 5e-2 (bf16).

    python3 -m benchmarks.python.generation [--quick] [--results FILE]
        [--plots DIR] [--layers N] [--new-tokens N] [--bigram X]
        [--check-steps N] [--budget-s S]

--quick: batch 16 and 64 x prompt 2048 and 8192 (the done-when row: batch 64,
prompt 8192, 128 tokens) and the correctness runs; the default sweeps batch
1-128 x prompt 1024-16384 (sdpa skipped where its cache would not fit).
--budget-s: correctness runs that would start after that many seconds are
skipped, saying so (the GPU session's time limit).
"""
import argparse
import gc
import os
import sys
import time

import torch

from cascade_mlir import transformers_backend as tb

OWN = 16


def inputs(cfg, batch, prompt_len, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, cfg.vocab_size, (prompt_len,), generator=g),
            torch.randint(0, cfg.vocab_size, (batch, OWN), generator=g))


def sdpa_cache_gb(cfg, batch, tokens):
    d = cfg.hidden_size // cfg.num_attention_heads
    return cfg.num_hidden_layers * batch * tokens * cfg.num_key_value_heads * d * 4 / 1e9


DEVICE = "cuda:0"


def free():
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def row(model, cfg, batch, prompt_len, new_tokens, max_sdpa_gb):
    prompt, own = inputs(cfg, batch, prompt_len)
    ours = tb.generate(model, prompt, own, new_tokens, time_attention=True)
    free()
    r = {"batch": batch, "prompt": prompt_len, "ours": ours, "sdpa": None}
    if sdpa_cache_gb(cfg, batch, prompt_len + OWN + new_tokens) <= max_sdpa_gb:
        r["sdpa"] = tb.generate_sdpa(model, prompt, own, new_tokens, time_attention=True)
        free()
    return r


def split(res):
    step = sum(res.step_ms) / len(res.step_ms)
    attn = sum(res.attention_ms) / len(res.attention_ms) if res.attention_ms else 0.0
    return step, attn, step - attn


def correctness(cfg, dtype, steps, batch, prompt_len, bigram, seed=0):
    """transformers_backend.greedy_agreement at (batch, prompt_len) on a
    random model (bigram: its planted successor strength, 0 for plain
    random weights)."""
    model = tb.random_model(cfg, dtype, DEVICE, seed=seed, bigram=bigram)
    prompt, own = inputs(cfg, batch, prompt_len, seed=seed + 1)
    r = tb.greedy_agreement(model, prompt, own, steps)
    del model
    free()
    r.update(dtype=str(dtype).replace("torch.", ""), bigram=bigram, prompt=prompt_len)
    return r


def append(path, text):
    if path:
        with open(path, "a") as f:
            f.write(text)


def plot(rows, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(outdir, exist_ok=True)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    def curves(ax, key, other, what):
        for value in sorted({r[other] for r in rows}):
            rs = sorted((r for r in rows if r[other] == value), key=lambda r: r[key])
            for name, mark in (("ours", "o-"), ("sdpa", "x--")):
                got = [r for r in rs if r[name] is not None]
                ax.plot([r[key] for r in got], [r[name].decode_tokens_per_s for r in got],
                        mark, label=f"{'cascade_mlir' if name == 'ours' else 'sdpa'}, "
                        f"{what} {value}")

    curves(axes[0], "batch", "prompt", "prompt")
    curves(axes[1], "prompt", "batch", "batch")
    axes[0].set(xlabel="batch size", ylabel="decode tokens/s", xscale="log", yscale="log",
                title="tokens/s vs batch")
    axes[1].set(xlabel="shared prompt tokens", ylabel="decode tokens/s", xscale="log",
                yscale="log", title="tokens/s vs prompt length")
    for a in axes:
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=6)
    fig.tight_layout()
    path = os.path.join(outdir, "generation_tokens_per_s.png")
    fig.savefig(path, dpi=120)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--layers", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=128)
    ap.add_argument("--max-sdpa-gb", type=float, default=80.0,
                    help="skip sdpa where its KV cache would exceed this")
    ap.add_argument("--results", help="append the markdown section to this file")
    ap.add_argument("--plots", help="write the plot into this folder")
    ap.add_argument("--bigram", type=float, default=tb.CALIBRATED_BIGRAM,
                    help="planted successor strength of the correctness model (the "
                    "plain random model is checked too)")
    ap.add_argument("--check-steps", type=int, default=32)
    ap.add_argument("--budget-s", type=float, default=1e9,
                    help="skip the remaining correctness runs after this many seconds")
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="a tiny model on the CPU, tiny sizes (checks the script only)")
    args = ap.parse_args()
    global DEVICE
    corr = (64, 8192)  # the done-when shape
    if args.cpu_smoke:
        DEVICE = "cpu"
        cfg = tb.llama_config("tiny")
        batches, prompts, corr, args.new_tokens = [2, 3], [20, 40], (3, 30), 4
        args.check_steps = 5
    elif not torch.cuda.is_available():
        print("no CUDA device: this benchmark times the GPU")
        return 2
    else:
        cfg = tb.llama_config("llama-32x8-d128", num_layers=args.layers)
    if args.cpu_smoke:
        pass
    elif args.quick:
        batches, prompts = [16, 64], [2048, 8192]
    else:
        batches, prompts = [1, 8, 16, 32, 64, 128], [1024, 2048, 4096, 8192, 16384]
    t0 = time.time()
    model = tb.random_model(cfg, torch.float16, DEVICE)
    params = sum(p.numel() for p in model.parameters()) / 1e9
    head = (f"Llama-architecture, random weights: {cfg.num_hidden_layers} layers, hidden "
            f"{cfg.hidden_size}, {cfg.num_attention_heads}/{cfg.num_key_value_heads} heads "
            f"of {cfg.hidden_size // cfg.num_attention_heads}, MLP {cfg.intermediate_size}, "
            f"vocab {cfg.vocab_size}, {params:.2f} B "
            f"parameters, fp16; {OWN} own tokens per sequence, {args.new_tokens} new tokens; "
            f"{torch.cuda.get_device_name() if DEVICE != 'cpu' else 'CPU'}, "
            f"torch {torch.__version__}")
    print(head)
    tb.generate(model, *inputs(cfg, 4, 64), 4)  # warm-up: kernels, cuBLAS
    tb.generate_sdpa(model, *inputs(cfg, 4, 64), 4)
    rows = []
    print("| batch | prompt | ours tok/s | sdpa tok/s | speed-up | ours step ms (attn + rest)"
          " | sdpa step ms (attn + rest) | greedy identical |")
    for p in prompts:
        for b in batches:
            r = row(model, cfg, b, p, args.new_tokens, args.max_sdpa_gb)
            rows.append(r)
            o = r["ours"]
            so, ao, ro = split(o)
            if r["sdpa"] is not None:
                s = r["sdpa"]
                ss, as_, rs = split(s)
                same = (o.tokens == s.tokens).all(0)
                first = None if bool(same.all()) else int((~same).nonzero()[0])
                r["line"] = (f"| {b} | {p} | {o.decode_tokens_per_s:,.0f} | "
                             f"{s.decode_tokens_per_s:,.0f} | "
                             f"{o.decode_tokens_per_s / s.decode_tokens_per_s:.2f}x | "
                             f"{so:.2f} ({ao:.2f} + {ro:.2f}) | "
                             f"{ss:.2f} ({as_:.2f} + {rs:.2f}) | "
                             f"{'all' if first is None else 'first ' + str(first)} |")
            else:
                r["line"] = (f"| {b} | {p} | {o.decode_tokens_per_s:,.0f} | (cache > "
                             f"{args.max_sdpa_gb:.0f} GB) | - | {so:.2f} ({ao:.2f} + "
                             f"{ro:.2f}) | - | - |")
            print(r["line"], flush=True)
    target = [r for r in rows if r["batch"] == 64 and r["prompt"] == 8192 and r["sdpa"]]
    if target:
        sp = target[0]["ours"].decode_tokens_per_s / target[0]["sdpa"].decode_tokens_per_s
        print(f"done-when row (batch 64, prompt 8192, {args.new_tokens} tokens): {sp:.2f}x "
              f"sdpa ({'met' if sp >= 1.5 else 'NOT met'}: >= 1.5x)", flush=True)
    path = None
    if args.plots:
        try:
            path = plot(rows, args.plots)
            print("plot:", path)
        except ImportError as e:
            print(f"no plot ({e})")
    # RESULTS.md gets each part as soon as it is measured (a run cut by the
    # session's time limit keeps what it had).
    append(args.results,
           f"\n## {time.strftime('%Y-%m-%d')}: shared-prompt generation with "
           "transformers (benchmarks/python/generation.py)\n\n" + head + ". Both "
           "eager; decode tokens/s = batch x steps / decode time; attention = CUDA "
           "events around every attention call (ours includes writing the step's K/V "
           "into the pages); greedy identical: plain random weights (see the "
           "correctness runs below).\n\n"
           "| batch | prompt | ours tok/s | sdpa tok/s | speed-up | ours step ms "
           "(attn + rest) | sdpa step ms (attn + rest) | greedy identical |\n"
           "| ---: | ---: | ---: | ---: | ---: | --- | --- | --- |\n"
           + "".join(r["line"] + "\n" for r in rows)
           + (f"\nPlot: python/plots/{os.path.basename(path)}.\n" if path else ""))
    del model
    free()
    checks = []
    for bigram in (args.bigram, 0.0):
        for dt in (torch.float16, torch.bfloat16):
            if time.time() - t0 > args.budget_s:
                print(f"correctness {dt}, bigram {bigram}: skipped (past --budget-s "
                      f"{args.budget_s:.0f})", flush=True)
                continue
            c = correctness(cfg, dt, args.check_steps, *corr, bigram=bigram)
            checks.append(c)
            what = f"planted bigram {bigram}" if bigram else "plain random weights"
            print(f"correctness {c['dtype']}, {what}: batch {c['batch']}, prompt "
                  f"{c['prompt']}, {c['steps']} steps", flush=True)
            for line in tb.agreement_lines(c):
                print("  " + line, flush=True)
            append(args.results, f"\nCorrectness {c['dtype']}, {what} (batch {c['batch']}, "
                   f"prompt {c['prompt']}, {c['steps']} steps):\n\n"
                   + "".join(f"- {x}\n" for x in tb.agreement_lines(c)))
    tol = {"float16": 1e-2, "bfloat16": 5e-2}
    ok = all(max(c["rel_logits"]) <= tol[c["dtype"]] for c in checks)
    print(f"total {time.time() - t0:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
