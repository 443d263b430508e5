"""Train one zoo model on a GPU with fla's own classes and training kernels, and save it as a
checkpoint `load_model` reads unconverted.

Variants: fox = fla `ForgettingTransformerForCausalLM`, path / path_fox = fla
`PaTHAttentionForCausalLM` without / with `use_forget_gate`, rope = transformers `LlamaForCausalLM`
with SDPA (fla's own Transformer needs flash-attn). Every variant gets the same data, token budget,
seed, optimizer (AdamW) and schedule (linear warmup, cosine decay to a tenth), bf16 autocast.

  lm        4 layers, hidden 192, 3 heads of 64, the 4096-piece BPE, on the windows `corpus` built
            (their width is the training length)
  flipflop  1 layer, 2 heads of 64 (hidden 128), the eight flip-flop symbols, on FFL(0.8) drawn
            afresh every step; the loss is taken at the read positions only (the bits a model can
            predict), and the error is measured on fixed in / sparse / dense sets every --eval-every steps
  a5        the A5 word problem (path_eval/tasks/a5.py), --layers 1-4 at hidden 128, 2 heads of 64, its
            65 symbols, words of --a5-length letters in --a5-form drawn afresh every step
  mqrar     MQRAR-N (path_eval/tasks/mqrar.py): 2 layers, hidden 256, 2 heads of 128 (the PaTH paper's
            shape), its 8194 symbols, --mqrar-n, --mqrar-pairs pairs, --mqrar-length tokens
            (training/tagging.py: the loss over labelled positions, the held-out accuracies)

Weights are saved in bf16 with tied input and output embeddings (the embedding dominates at this
width), with a model card (model_card.json, README.md) beside them.

With --wait-for-stream the process compiles the training kernels first (one forward and backward
on random tokens of the training shape, no optimizer step: the weights stay as initialised) and
then waits for the windows file, so that compiling overlaps building the windows.

With --agree-dir the models trained at once (one process each) agree on one number of steps, the
most the slowest fits before its --deadline-s and at most --steps (training/agreement.py), so every
variant sees the same tokens under one schedule; the card keeps what each member measured.

With --cuda-graphs (A5 and MQRAR-N on a GPU) each step's forward and backward are replayed from
CUDA graphs captured on the first batch (`step_loss`); the card's steps_run says whether they were,
or why not.

With --pause-after N (A5 and MQRAR-N) a process trains at most N steps, or until --deadline-s,
then saves what the next needs (OUT/resume.pt: float32 weights, optimizer state, the curve so far)
and stops without a card; the same command goes on from there, so a budget longer than one device
call is still one schedule. The model is the one an uninterrupted run gives, bit for bit on the CPU
(every batch is drawn from its own seed); the card lists the segments.
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from path_eval.errors import PathEvalError
from path_eval.tasks import a5, flipflop, mqrar
from training import run_cli, tagging
from training.corpus import HELDOUT_FILE

PROCESS_START = time.time()
RESUME_FILE = "resume.pt"  # a paused model's state, in its output folder

FLA_TYPES = {"fox": ("forgetting_transformer", {}), "path": ("path_attn", {}),
             "path_fox": ("path_attn", {"use_forget_gate": True})}
VARIANTS = ("rope", "fox", "path", "path_fox")
SHAPES = {"lm": {"layers": 4, "hidden": 192, "heads": 3}, "flipflop": {"layers": 1, "hidden": 128, "heads": 2},
          "a5": {"layers": 2, "hidden": 128, "heads": 2}, "mqrar": {"layers": 2, "hidden": 256, "heads": 2}}
AGREEMENT_TIMED_STEPS = 10  # steps each member of --agree-dir times (after one that compiles)
TAGGING_EVAL = 512  # held-out sequences scored every --eval-every steps (--final-eval at the end)
EVAL_SETS = {"in": 512, "sparse": 4096, "dense": 128}  # sequences per split (the sparse split has few reads)
FINAL_EVAL_SETS = {"in": 4096, "sparse": 16384, "dense": 1024}
EVAL_SEED, FINAL_EVAL_SEED = 10_001, 20_001


def build_model(variant: str, vocab: int, layers: int, hidden: int, heads: int, bos: int, eos: int, pad: int):
    from transformers import AutoConfig, AutoModelForCausalLM

    common = dict(vocab_size=vocab, num_hidden_layers=layers, hidden_size=hidden, tie_word_embeddings=True,
                  bos_token_id=bos, eos_token_id=eos, pad_token_id=pad)
    if variant == "rope":
        from transformers import LlamaConfig, LlamaForCausalLM

        # fla's MLP width at hidden_ratio 4 (256 * ceil(int(4 * hidden * 2 / 3) / 256)); no context cap, so
        # evaluations past the training length are possible.
        intermediate = 256 * math.ceil(int(hidden * 4 * 2 / 3) / 256)
        config = LlamaConfig(num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=intermediate,
                             rms_norm_eps=1e-6, max_position_embeddings=65536, attn_implementation="sdpa", **common)
        return LlamaForCausalLM(config)
    from training.autotune import pin_autotuning

    pin_autotuning()  # one launch configuration per helper kernel: no minutes of autotuning per process
    import fla  # noqa: F401  (registers fla's model types with transformers)

    model_type, options = FLA_TYPES[variant]
    # fla's fused RMSNorm / SwiGLU compute the same functions as its plain ones (the weights are the
    # same); the plain ones spare minutes of Triton autotuning in every one of the parallel processes.
    config = AutoConfig.for_model(model_type, num_heads=heads, use_cache=False, fuse_norm=False, fuse_swiglu=False,
                                  **common, **options)
    return AutoModelForCausalLM.from_config(config)


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def logits_of(model, ids: torch.Tensor) -> torch.Tensor:
    """bf16 autocast on a GPU; float32 on the CPU (smoke tests of the recipe)."""
    with torch.autocast(ids.device.type, dtype=torch.bfloat16, enabled=ids.device.type == "cuda"):
        return model(input_ids=ids, use_cache=False).logits.float()


def labelled_loss(model, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The mean next-token loss over the labelled positions (targets not -100), the output layer
    applied at those positions alone: MQRAR-N labels a few dozen of its 768 positions at most, and its
    full float32 logits (64 x 768 x 8194) cost more than the rest of its step. The same loss as
    cross-entropy over full logits with ignore_index -100 (tests/training/test_train_loss.py)."""
    positions = labelled_positions(targets)
    return PositionsLoss(model)(inputs, positions, targets.flatten()[positions])


def labelled_positions(targets: torch.Tensor) -> torch.Tensor:
    """The flat indices of a batch's labelled positions (targets not -100), in row-major order."""
    return (targets.flatten() != -100).nonzero().flatten()


def padded_positions(targets: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(positions, labels), both of length `size`: the labelled positions in row-major order and
    their targets, then position 0 with label -100 (ignored) up to `size`. Static shapes, computed
    on the device without a host synchronisation, so that a CUDA graph can take them as inputs.
    `size` must bound the batch's labelled positions (`TaggingTask.labels_per_sequence`)."""
    flat = targets.flatten()
    found = torch.nonzero_static(flat != -100, size=size, fill_value=-1).flatten()
    positions = found.clamp(min=0)
    return positions, flat[positions].masked_fill(found < 0, -100)


class PositionsLoss(torch.nn.Module):
    """The loss of `labelled_loss` at given flat positions against their labels (-100 ignored): a
    batch's own positions (`labelled_loss`), or, for a CUDA graph, `padded_positions`, whose shapes
    are the same in every batch. Autocast keeps no weight cache, which would not outlive a replay."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, inputs: torch.Tensor, positions: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        gpu = inputs.device.type == "cuda"
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=gpu, cache_enabled=False):
            hidden = self.model.model(input_ids=inputs, use_cache=False).last_hidden_state
            logits = self.model.lm_head(hidden.flatten(0, 1)[positions])
        return F.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)), labels)


def step_loss(model, args, task, inputs: torch.Tensor, targets: torch.Tensor):
    """(loss function of a batch, how steps run). Eager `labelled_loss`; with --cuda-graphs, for A5
    and MQRAR-N on a GPU, the forward and backward replayed from CUDA graphs
    (`torch.cuda.make_graphed_callables` on `PositionsLoss`, captured on the first batch, the labelled
    positions padded to the task's bound so that every batch has the same shapes): a small model's
    step is bound by launching its hundreds of kernels (A5 at 16 processes: 28-48 ms a step for a few
    GFLOP), which a replay does at once. Where capturing fails, or the replayed loss of the first
    batch differs from the eager one by more than 1e-3, steps run eagerly and the card says why."""
    def eager(x, y):
        return labelled_loss(model, x, y)
    if not args.cuda_graphs:
        return eager, "eager"
    if args.device != "cuda":
        return eager, "eager (CUDA graphs need a CUDA device)"
    if task is None:
        return eager, "eager (CUDA graphs need a bound on the labelled positions, as A5's and MQRAR-N's)"
    size = targets.shape[0] * task.labels_per_sequence
    try:
        with torch.no_grad():
            expected = labelled_loss(model, inputs, targets).item()
        graphed = torch.cuda.make_graphed_callables(PositionsLoss(model),
                                                    (inputs.clone(), *padded_positions(targets, size)),
                                                    allow_unused_input=True)
        replayed = graphed(inputs, *padded_positions(targets, size)).item()
    except Exception as error:  # noqa: BLE001  (any capture failure: the steps run eagerly instead)
        first_line = str(error).splitlines()[0][:160] if str(error) else ""
        return eager, f"eager (capturing failed: {type(error).__name__}: {first_line})"
    model.zero_grad(set_to_none=True)
    if abs(replayed - expected) > 1e-3 * abs(expected):
        return eager, f"eager (the replayed loss {replayed:.6f} differs from the eager {expected:.6f})"
    return (lambda x, y: graphed(x, *padded_positions(y, size))), "cuda graphs"


def wait_for(path: Path, deadline_s: float | None) -> None:
    while not path.exists():
        if deadline_s and time.time() - PROCESS_START > deadline_s:
            raise PathEvalError(f"{path} did not appear before the deadline: the windows were not built")
        time.sleep(1.0)


def random_steps(model, vocab: int, batch: int, length: int, count: int = 1) -> float:
    """`count` forwards and backwards at the training shape on random tokens (their own generator:
    the seeded initialisation and data order are untouched), gradients dropped and no optimizer step,
    so the weights stay as initialised. The first ever compiles the kernels. Seconds a step, on average."""
    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(12345)
    synchronize(device.type)
    started = time.time()
    for _ in range(count):
        ids = torch.randint(3, vocab, (batch, length + 1), device=device, generator=generator)
        labelled_loss(model, ids[:, :-1], ids[:, 1:]).backward()
        model.zero_grad(set_to_none=True)
    synchronize(device.type)
    return (time.time() - started) / count


def agreed_budget(args, model, vocab: int, length: int) -> dict:
    """The steps this model trains with the other members of --agree-dir (training/agreement.py):
    kernels compiled first, so that the timed steps are steady ones taken while every member times."""
    from training.agreement import agree

    random_steps(model, vocab, args.batch, length)
    return agree(Path(args.agree_dir), agreement_name(args.out), args.agree_members, args.steps,
                 lambda: random_steps(model, vocab, args.batch, length, AGREEMENT_TIMED_STEPS),
                 lambda: args.deadline_s - (time.time() - PROCESS_START))


def agreement_name(out: str) -> str:
    """A member's name: its output folder (replicas of one variant share the last part)."""
    return str(Path(out)).strip("/").replace("/", "_")


def lm_batches(stream_path: str, batch: int, steps: int, pad: int, length: int):
    stream = np.load(stream_path, mmap_mode="r")
    if stream.shape[1] - 1 != length:
        raise PathEvalError(f"{stream_path} holds windows of {stream.shape[1] - 1} tokens, not --length {length}: "
                            f"build it with --length {length}")
    if steps * batch > len(stream):
        raise PathEvalError(f"{steps} steps of {batch} windows need {steps * batch} windows but {stream_path} holds "
                            f"{len(stream)}: build it with --windows {steps * batch}")
    for step in range(steps):
        window = torch.from_numpy(stream[step * batch:(step + 1) * batch].astype(np.int64)).cuda(non_blocking=True)
        targets = window[:, 1:].masked_fill(window[:, 1:] == pad, -100)
        yield window[:, :-1], targets


def flipflop_batches(batch: int, steps: int, seed: int):
    for step in range(steps):
        tokens = flipflop.generate(batch, flipflop.SPLITS["in"], seed=1_000_000 * (seed + 1) + step)
        reads = flipflop.read_positions(tokens)
        window = torch.from_numpy(tokens).cuda(non_blocking=True)
        targets = torch.from_numpy(np.where(reads, tokens, -100)).cuda(non_blocking=True)
        yield window[:, :-1], targets[:, 1:]


@torch.no_grad()
def flipflop_errors(model, sets: dict[str, int], seed: int) -> dict[str, float]:
    model.eval()
    errors = {}
    for split, count in sets.items():
        wrong = reads = 0
        for start in range(0, count, 256):
            tokens = flipflop.generate(min(256, count - start), flipflop.SPLITS[split], seed=seed + 7919 * start
                                       + {"in": 0, "sparse": 1, "dense": 2}[split])
            predictions = logits_of(model, torch.from_numpy(tokens).cuda()).argmax(-1).cpu().numpy()
            w, r = flipflop.read_errors(tokens, predictions)
            wrong, reads = wrong + w, reads + r
        errors[split] = wrong / reads
        errors[f"{split}_reads"] = reads
    model.train()
    return errors


@torch.no_grad()
def heldout_loss(model, tokenizer_dir: Path, heldout: Path, length: int) -> dict:
    """Mean next-token loss over the held-out text cut into windows of the training length."""
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(tokenizer_dir / "tokenizer.json")).encode(heldout.read_text()).ids
    windows = torch.tensor(ids[:len(ids) // (length + 1) * (length + 1)]).view(-1, length + 1).cuda()
    model.eval()
    total = 0.0
    for chunk in windows.split(16):
        logits = logits_of(model, chunk[:, :-1])
        total += F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum").item()
    model.train()
    return {"loss": total / (windows.shape[0] * length), "windows": windows.shape[0], "tokens": windows.shape[0] * length}


def train(args) -> bool:
    """One model from initialisation, or from the state a process paused it in (--pause-after), to
    its saved card (True) or to its next pause (False)."""
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    shape = SHAPES[args.task] | ({"layers": args.layers} if args.layers else {}) | ({"heads": args.heads} if args.heads else {})
    task = tagging_task(args)
    if task is not None:
        vocab, length = len(task.vocabulary.symbols), task.tokens
        bos, eos, pad = task.special_ids()
    elif args.task == "lm":
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(Path(args.tokenizer) / "tokenizer.json"))
        vocab = tokenizer.get_vocab_size()
        bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
        length = args.length
    else:
        vocab, bos, eos, pad = flipflop.VOCAB_SIZE, flipflop.BOS, flipflop.EOS, flipflop.PAD
        length = flipflop.LENGTH
    model = build_model(args.variant, vocab, bos=bos, eos=eos, pad=pad, **shape).to(args.device).train()
    if args.wait_for_stream:
        random_steps(model, vocab, args.batch, length)
        print(json.dumps({"compiled_s": round(time.time() - PROCESS_START, 1)}), flush=True)
        wait_for(Path(args.stream), args.deadline_s)
        wait_for(Path(args.stream_info), args.deadline_s)
    agreement = None
    if args.agree_dir:
        agreement = agreed_budget(args, model, vocab, length)
        args.steps = agreement["steps"]
        print(json.dumps({"agreed_steps": args.steps, "members": agreement["members"]}), flush=True)
    paused_state = Path(args.out) / RESUME_FILE
    resumed = load_paused(paused_state, args) if paused_state.is_file() else None
    first_step = resumed["steps_done"] if resumed else 0
    if task is not None:
        batches = tagging.batches(task, args.batch, args.steps, args.seed, args.device, first_step)
    elif args.task == "lm":
        batches = lm_batches(args.stream, args.batch, args.steps, pad, length)
    else:
        batches = flipflop_batches(args.batch, args.steps, args.seed)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=args.device == "cuda")
    warmup = max(1, int(args.warmup * args.steps))
    curve, recent, start, timed_start = [], [], time.time(), None
    segments, throughput = [], None  # earlier processes' steps, seconds, revision and step mode; tokens/s
    if resumed:
        model.load_state_dict(resumed["model"])
        optimizer.load_state_dict(resumed["optimizer"])
        curve, segments, throughput = resumed["curve"], resumed["segments"], resumed["tokens_per_s"]
        recent = [torch.tensor(value, device=args.device) for value in resumed["recent"]]
        print(json.dumps({"resumed_at_step": first_step}), flush=True)
    print(f"{args.variant}/{args.task}: {sum(p.numel() for p in model.parameters()):,} parameters", flush=True)
    steps_done, stopped_at_deadline, loss_of, step_mode = first_step, False, None, None

    def save_segment(steps_done: int) -> None:
        """Pause: this process's steps saved for the next to go on from (`save_paused`)."""
        synchronize(args.device)
        (Path(args.out) / "model_card.json").unlink(missing_ok=True)  # an earlier schedule's: not this model
        save_paused(paused_state, args, model, optimizer, steps_done, curve, recent,
                    segments + [segment(args, first_step, steps_done, start, step_mode)],
                    throughput or segment_throughput(args, length, steps_done - first_step, timed_start))
        print(json.dumps({"paused_at_step": steps_done}), flush=True)
    for step, (inputs, targets) in enumerate(batches, start=first_step):
        if args.deadline_s and time.time() - PROCESS_START > args.deadline_s:
            if args.pause_after and steps_done > first_step:  # pausing: the schedule goes on next time
                save_segment(steps_done)
                return False
            stopped_at_deadline = True
            break
        if loss_of is None:
            loss_of, step_mode = step_loss(model, args, task, inputs, targets)
            print(json.dumps({"steps_run": step_mode}), flush=True)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, args.steps, args.lr, warmup)
        loss = loss_of(inputs, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        recent.append(loss.detach().clone())  # a replayed graph's loss is overwritten by the next replay
        steps_done = step + 1
        if steps_done in (1, 10):  # the first steps include compiling fla's kernels
            print(json.dumps({"step": steps_done, "loss": loss.item(), "elapsed_s": round(time.time() - start, 1)}), flush=True)
        if step == first_step + 20:
            synchronize(args.device)
            timed_start = time.time()
        if (step + 1) % args.log_every == 0 or step + 1 == args.steps:
            point = {"step": step + 1, "loss": torch.stack(recent).mean().item(), "lr": lr_at(step, args.steps, args.lr, warmup),
                     "elapsed_s": round(time.time() - start, 1)}
            recent = []
            if args.task == "flipflop" and ((step + 1) % args.eval_every == 0 or step + 1 == args.steps):
                point["error"] = flipflop_errors(model, EVAL_SETS, EVAL_SEED)
            if task is not None and ((step + 1) % args.eval_every == 0 or step + 1 == args.steps):
                point["accuracy"] = tagging.accuracies(model, task, min(TAGGING_EVAL, args.final_eval),
                                                       tagging.EVAL_SEED, logits_of)
            curve.append(point)
            print(json.dumps(point), flush=True)
        if args.pause_after and steps_done - first_step == args.pause_after and steps_done < args.steps:
            save_segment(steps_done)
            return False
    if steps_done == first_step:  # a model that never stepped is no model: nothing is saved
        raise PathEvalError(f"{args.out}: --deadline-s {args.deadline_s:g} passed before the first training step "
                            f"(the process had run {time.time() - PROCESS_START:.0f} s); give a later deadline, or "
                            "fewer models to each worker")
    if recent:
        curve.append({"step": steps_done, "loss": torch.stack(recent).mean().item(), "elapsed_s": round(time.time() - start, 1)})
    synchronize(args.device)
    segments = segments + [segment(args, first_step, steps_done, start, step_mode)]
    wall = sum(part["wall_s"] for part in segments)
    tokens_per_step = args.batch * length
    throughput = throughput or segment_throughput(args, length, steps_done - first_step, timed_start)
    card = {"variant": args.variant, "task": args.task, "architecture": type(model).__name__,
            "parameters": sum(p.numel() for p in model.parameters()), **shape, "head_dim": shape["hidden"] // shape["heads"],
            "vocab_size": vocab, "tie_word_embeddings": True, "weights_dtype": "bfloat16",
            "training_length": length, "steps": steps_done, "planned_steps": args.steps,
            "stopped_at_deadline": stopped_at_deadline, "batch_windows": args.batch,
            "tokens": steps_done * tokens_per_step, "seed": args.seed,
            "optimizer": {"name": "AdamW", "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": args.weight_decay,
                          "weight_decay_on": "matrices and embeddings, not norms and biases", "grad_clip": 1.0},
            "lr_schedule": {"peak": args.lr, "warmup_steps": warmup, "decay": "cosine", "final": args.lr * 0.1},
            "precision": "bf16 autocast, fp32 master weights", "steps_run": step_mode,
            "final_training_loss": curve[-1]["loss"], "curve": curve,
            "wall_time_s": round(wall, 1), "tokens_per_s": round(throughput) if throughput else None,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" else args.device, "torch": torch.__version__,
            "command": command_of(args), "git_revision": args.revision}
    if len(segments) > 1:
        card["segments"] = segments
    if agreement:
        card["budget_agreement"] = agreement
    if args.task == "lm":
        card["heldout"] = {"text": f"path_eval/zoo/heldout/{Path(args.heldout).name}", "length": length,
                           **heldout_loss(model, Path(args.tokenizer), Path(args.heldout), length)}
        card["data"] = json.loads(Path(args.stream_info).read_text()) if args.stream_info else None
    elif task is not None:
        card["loss_on"] = "labelled positions only (" + ("every letter" if task.name == "a5" else "the keys") + ")"
        card["data"] = {"generator": f"path_eval.tasks.{task.name}.generate", **task.options,
                        "seed_per_step": "1_000_000 * (seed + 1) + step"}
        card["accuracy"] = {"seed": tagging.FINAL_EVAL_SEED,
                            **tagging.accuracies(model, task, args.final_eval, tagging.FINAL_EVAL_SEED, logits_of)}
    else:
        card["loss_on"] = "read positions only (the bits that follow a read instruction)"
        card["data"] = {"generator": "path_eval.tasks.flipflop.generate", "p_ignore": flipflop.SPLITS["in"],
                        "seed_per_step": "1_000_000 * (seed + 1) + step"}
        card["flipflop_error"] = {"sets": FINAL_EVAL_SETS, "seed": FINAL_EVAL_SEED,
                                  **flipflop_errors(model, FINAL_EVAL_SETS, FINAL_EVAL_SEED)}
    symbols = flipflop.SYMBOLS if args.task == "flipflop" else task.vocabulary.symbols if task else None
    save(model, card, Path(args.out), Path(args.tokenizer) if args.task == "lm" else None, symbols)
    paused_state.unlink(missing_ok=True)
    print(json.dumps({k: v for k, v in card.items() if k != "curve"}), flush=True)
    return True


def segment(args, first_step: int, steps_done: int, start: float, step_mode: str | None) -> dict:
    """One process's part of a paused model's schedule: its steps, seconds, revision and how its steps
    ran (the card's own fields describe the last process only)."""
    return {"steps": [first_step, steps_done], "wall_s": round(time.time() - start, 1), "revision": args.revision,
            "steps_run": step_mode, "gpu": torch.cuda.get_device_name() if args.device == "cuda" else args.device}


def segment_throughput(args, length: int, steps: int, timed_start: float | None) -> float | None:
    """Tokens a second over this process's steps from its 21st on (the first compile the kernels)."""
    timed_steps = steps - 21
    return args.batch * length * timed_steps / (time.time() - timed_start) if timed_start and timed_steps > 0 else None


# Settings a paused model's state holds it to: the rest (where it runs, its deadline, the revision,
# how many steps a process takes) may differ between the processes that train it.
RESUMABLE_UNCHANGED = ("variant", "task", "steps", "batch", "lr", "warmup", "weight_decay", "seed", "layers",
                       "heads", "a5_form", "a5_length", "mqrar_n", "mqrar_pairs", "mqrar_length", "log_every",
                       "eval_every", "cuda_graphs")


def save_paused(path: Path, args, model, optimizer, steps_done: int, curve: list, recent: list, segments: list,
                throughput: float | None) -> None:
    """What a later process needs to go on exactly where this one paused: the float32 weights and
    the optimizer's state, the steps done, the curve so far and the losses not yet logged."""
    from path_eval.atomic_files import staged

    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"settings": {name: getattr(args, name) for name in RESUMABLE_UNCHANGED}, "steps_done": steps_done,
             "model": model.state_dict(), "optimizer": optimizer.state_dict(), "curve": curve,
             "recent": [loss.item() for loss in recent], "segments": segments, "tokens_per_s": throughput}
    with staged(path, binary=True) as handle:
        torch.save(state, handle)


def load_paused(path: Path, args) -> dict:
    """A paused model's state, if the command is the one it paused under."""
    state = torch.load(path, map_location=args.device, weights_only=False)
    changed = [name for name, value in state["settings"].items() if getattr(args, name) != value]
    if changed:
        raise PathEvalError(f"{path} paused under other settings ({', '.join(changed)}): give the command it "
                            f"paused under, or remove {path} to train from the start")
    return state


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def tagging_task(args) -> tagging.TaggingTask | None:
    """The diagnostic a5 / mqrar trains on at its options; None for lm and flipflop."""
    if args.task == "a5":
        return tagging.a5_task(args.a5_length, args.a5_form)
    if args.task == "mqrar":
        return tagging.mqrar_task(args.mqrar_n, args.mqrar_length, args.mqrar_pairs)
    return None


def save(model, card: dict, out: Path, tokenizer_dir: Path | None, symbols: tuple[str, ...] | None) -> None:
    """The weights, the tokenizer (the language models' BPE from `tokenizer_dir`, else the task's
    `symbols`) and the card."""
    from training import tokenizer as zoo_tokenizer

    out.mkdir(parents=True, exist_ok=True)
    model.to(torch.bfloat16).save_pretrained(out)
    if tokenizer_dir is not None:
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(tokenizer_dir / name, out / name)
    else:
        zoo_tokenizer.save(zoo_tokenizer.symbol_tokenizer(symbols), out)
    (out / "model_card.json").write_text(json.dumps(card, indent=1) + "\n")
    (out / "README.md").write_text(readme(card))


def readme(card: dict) -> str:
    lines = [f"# {card['variant']} ({card['task']}), {card['architecture']}", "",
             f"{card['layers']} layer(s), hidden {card['hidden']}, {card['heads']} heads of {card['head_dim']}, "
             f"vocabulary {card['vocab_size']}, {card['parameters']:,} parameters (tied embeddings), weights in bf16.",
             f"Trained at length {card['training_length']} for {card['steps']} steps of {card['batch_windows']} windows "
             f"({card['tokens']:,} tokens), AdamW, peak lr {card['lr_schedule']['peak']} with "
             f"{card['lr_schedule']['warmup_steps']} warmup steps and cosine decay to a tenth, seed {card['seed']}, "
             f"on {card['gpu']} in {card['wall_time_s']} s.",
             f"Final training loss {card['final_training_loss']:.4f}."]
    if card.get("budget_agreement"):
        agreement = card["budget_agreement"]
        lines.append(f"Its {card['planned_steps']} steps were agreed among the {len(agreement['members'])} models trained "
                     f"at once (at most {agreement['cap']}; training/agreement.py): the same budget for each.")
    if card["stopped_at_deadline"]:
        lines.append(f"Stopped at the run's deadline after {card['steps']} of {card['planned_steps']} planned steps "
                     "(the cosine schedule was cut short).")
    if card["task"] == "lm":
        lines.append(f"Held-out loss at length {card['heldout']['length']}: {card['heldout']['loss']:.4f} "
                     f"({card['heldout']['text']}).")
        if card["data"]:
            lines.append(f"Data: the zoo mixture (training/corpus.py), windows sha256 {card['data']['sha256']}.")
    elif "accuracy" in card:
        a = card["accuracy"]
        options = ", ".join(f"{key} {value}" for key, value in card["data"].items() if key not in ("generator",
                                                                                                "seed_per_step"))
        lines.append(f"Task: {card['task']} ({options}). Held-out accuracy on {a['sequences']:,} sequences: token "
                     f"{a['token_accuracy']:.2%}, sequence {a['sequence_accuracy']:.2%}, final "
                     f"{a['final_accuracy']:.2%}; loss on {card['loss_on']}.")
    else:
        e = card["flipflop_error"]
        lines.append(f"Flip-flop error (share of reads wrong): in {e['in']:.4%}, sparse {e['sparse']:.4%}, "
                     f"dense {e['dense']:.4%}; loss on {card['loss_on']}.")
    lines += ["", f"Command: `{card['command']}` at revision {card['git_revision']}.",
              "Every number, with the loss curve, is in model_card.json.", ""]
    return "\n".join(lines)


def command_of(args) -> str:
    """The command line that trains this model again: every option whose value is not its default,
    the agreed --steps in place of the agreement's options (alone, the model needs no other members),
    without --pause-after (where a process pauses changes nothing the model computes)."""
    words = ["python -m training.train"]
    for action in parser()._actions:
        if not action.option_strings or action.dest in ("help", "agree_dir", "agree_members", "pause_after"):
            continue
        value = getattr(args, action.dest)
        if value == action.default:
            continue
        words.append(action.option_strings[0] if value is True else f"{action.option_strings[0]} {value}")
    return " ".join(words)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    parser.add_argument("--task", choices=tuple(SHAPES), default="lm")
    parser.add_argument("--stream", help="lm: the .npy of windows from training.corpus")
    parser.add_argument("--stream-info", help="lm: the JSON line corpus printed (sha256, sources)")
    parser.add_argument("--tokenizer", help="lm: folder with the zoo's tokenizer.json")
    parser.add_argument("--heldout", default=str(HELDOUT_FILE))
    parser.add_argument("--length", type=int, default=1024, help="lm: the training length (the windows' width)")
    parser.add_argument("--wait-for-stream", action="store_true",
                        help="compile the kernels first, then wait for --stream and --stream-info to appear")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--warmup", type=float, default=0.03, help="share of steps")
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log-every", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--deadline-s", type=float, default=None,
                        help="stop (and save) once this many seconds have passed since the process started")
    parser.add_argument("--agree-dir", help="train as many steps as every model meeting in this folder fits before "
                                            "its deadline, at most --steps (training/agreement.py; needs --deadline-s)")
    parser.add_argument("--agree-members", type=int, default=None, help="with --agree-dir: how many models meet there")
    parser.add_argument("--revision", default="unknown", help="git revision of the code (the GPU copy has no .git)")
    parser.add_argument("--layers", type=int, help="the model's depth in place of its task's (a5: 1-4)")
    parser.add_argument("--heads", type=int, help="attention heads in place of the task's (the hidden size stays)")
    parser.add_argument("--a5-form", choices=("product", "identity"), default="product")
    parser.add_argument("--a5-length", type=int, default=a5.TRAINED_LENGTH, help="a5: letters per word (k)")
    parser.add_argument("--mqrar-n", type=int, default=1, help="mqrar: the label is the value N assignments back")
    parser.add_argument("--mqrar-pairs", type=int, default=mqrar.PAIRS)
    parser.add_argument("--mqrar-length", type=int, default=768)
    parser.add_argument("--pause-after", type=int, default=None,
                        help="a5, mqrar: after this many steps in this process (or at --deadline-s), save the state "
                             "(OUT/resume.pt) and stop; the same command goes on from there (a budget longer than "
                             "one device call)")
    parser.add_argument("--final-eval", type=int, default=4096, help="a5, mqrar: held-out sequences scored at the end")
    parser.add_argument("--cuda-graphs", action="store_true",
                        help="a5, mqrar on a GPU: each step's forward and backward replayed from CUDA graphs "
                             "(eager where capturing fails; the card's steps_run says which)")
    parser.add_argument("--device", default="cuda", help="cuda; cpu for smoke tests of the recipe and the ci "
                                                          "suite's small A5 model")
    parser.add_argument("--out", required=True)
    return parser


def main() -> None:
    arguments = parser()
    args = arguments.parse_args()
    if args.task == "lm" and not (args.stream and args.tokenizer):
        arguments.error("--task lm needs --stream and --tokenizer")
    if args.agree_dir and not (args.deadline_s and args.agree_members):
        arguments.error("--agree-dir needs --deadline-s (the time to fit) and --agree-members (how many meet)")
    if args.pause_after is not None and (args.task not in ("a5", "mqrar") or args.agree_dir or args.pause_after < 1):
        arguments.error("--pause-after takes a positive number of steps, for --task a5 or mqrar without --agree-dir")
    try:
        train(args)
    except BaseException:
        if args.agree_dir:  # the others agree without this model instead of waiting for it
            from training.agreement import withdraw

            withdraw(Path(args.agree_dir), agreement_name(args.out))
        raise


if __name__ == "__main__":
    run_cli(main)
