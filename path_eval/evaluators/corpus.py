"""Per-position perplexity of corpora at block lengths, for one model (see
`path_eval.tasks.extrapolation` for the protocol). Each finished block is logged at once (its
per-bucket sums in a JSONL line, its per-position NLL in an .npy file), so a killed run resumes
block by block; the mean NLL per position of each (corpus, length) is kept as a curve
(OUT/curves/MODEL/TASK@LENGTH.npy)."""
from __future__ import annotations

import hashlib
import json
from itertools import islice
from pathlib import Path

import numpy as np

from path_eval import run_folder
from path_eval.atomic_files import write_jsonl_atomic, write_npy_atomic
from path_eval.data import fingerprint
from path_eval.errors import PathEvalError
from path_eval.evaluators.interface import EvaluationContext, FrozenSet, PositionBucket, TaskResult, native_output
from path_eval.kinds import length_log_name
from path_eval.lm.progress import RequestProgress
from path_eval.metrics.aggregation import perplexity_and_stderr
from path_eval.plan import PlannedItem
from path_eval.tasks.extrapolation import blocks, bucket_edges, documents, token_stream


def score_corpus(lm, task, length: int, suite, data_dir: Path, samples_dir: Path, limit: int | None = None) -> dict:
    """`limit` (else the suite's max_blocks) caps the number of blocks. Under data parallelism the
    processes take the blocks in turns (block i to process i mod N), and after each turn every
    process gets the turn's rows and per-position NLL, in block order, so the sums are those of one
    process; the first alone writes the log.
    Returns {"buckets": [(first, last, nll_sum, count, per-block means)], "total": (...),
    "blocks": n, "rows": the logged row of each block, "files": [...], "curve": mean NLL per position}."""
    texts, files = documents(task.corpus, data_dir, suite.command_name)
    edges = bucket_edges(length, suite.bucket_size)
    log_file = run_folder.log_file(samples_dir, length_log_name(task.name, length))
    block_dir = run_folder.block_folder(samples_dir, length_log_name(task.name, length))
    block_dir.mkdir(parents=True, exist_ok=True)
    finished = {}
    if log_file.is_file():
        finished = {row["block"]: row for row in map(json.loads, log_file.read_text().splitlines())}
    rows, curve_sum = [], np.zeros(length - 1)
    cap = limit or suite.max_blocks
    rank, processes = lm.process_index, lm.process_count

    def scored(index: int, block: list[int]) -> tuple[dict, np.ndarray]:
        digest = hashlib.sha256(np.asarray(block, dtype=np.int64).tobytes()).hexdigest()
        nll_file = run_folder.block_file(block_dir, index)
        row = finished.get(index)
        if row is not None and row["tokens_sha256"] == digest and nll_file.is_file():
            return row, np.load(nll_file)
        nll = lm.next_token_nll(block).cpu().numpy().astype(np.float64)
        write_npy_atomic(nll.astype(np.float32), nll_file)
        return {"block": index, "tokens_sha256": digest, "first_tokens": block[:8],
                "nll_sum": [float(nll[a:b + 1].sum()) for a, b in edges],
                "count": [b - a + 1 for a, b in edges], "nll_file": str(nll_file.relative_to(samples_dir))}, nll

    numbered = enumerate(blocks(token_stream(texts, lm.tokenizer), length, cap))
    with RequestProgress(lm, f"{task.name} @{length} (blocks)", cap) as bar:
        while turn := list(islice(numbered, processes)):
            mine = scored(*turn[rank]) if rank < len(turn) else None
            for row, nll in filter(None, lm.gather_object(mine)):
                rows.append(row)
                curve_sum += nll
            if rank == 0:
                write_jsonl_atomic(rows, log_file)
            lm.save_progress()
            bar.advance(len(turn))
    if not rows:
        raise PathEvalError(f"corpus {task.name} has fewer than {length} tokens: it cannot fill one block; "
                            "use a shorter --lengths or more data")
    buckets = []
    for k, (a, b) in enumerate(edges):
        means = [r["nll_sum"][k] / r["count"][k] for r in rows]
        buckets.append((a, b, sum(r["nll_sum"][k] for r in rows), sum(r["count"][k] for r in rows), means))
    totals = [sum(r["nll_sum"]) / sum(r["count"]) for r in rows]
    total = (0, length - 2, sum(sum(r["nll_sum"]) for r in rows), sum(sum(r["count"]) for r in rows), totals)
    return {"buckets": buckets, "total": total, "blocks": len(rows), "rows": rows, "files": files,
            "fingerprint": fingerprint(files), "curve": curve_sum / len(rows)}


class CorpusEvaluator:
    def frozen_sets(self, tokenizer, items: list[PlannedItem], context: EvaluationContext) -> list[FrozenSet]:
        return []  # the corpora are read as they are

    def run(self, lm, items: list[PlannedItem], context: EvaluationContext) -> list[TaskResult]:
        plan = context.plan
        results = []
        for item in items:
            scored = score_corpus(lm, plan.spec(item), item.length, plan.suite, plan.data_dir, context.samples_dir,
                                  plan.limit)
            if lm.process_index != 0:
                continue  # every process holds the same sums: the first writes the curve and reports
            curve = run_folder.curve_file(context.out, context.model.name, length_log_name(item.task, item.length))
            write_npy_atomic(scored["curve"].astype(np.float32), curve)
            _, _, nll_sum, count, means = scored["total"]
            value, stderr = perplexity_and_stderr(nll_sum, count, means)
            buckets = [PositionBucket(first, last, *perplexity_and_stderr(bucket_sum, bucket_count, bucket_means))
                       for first, last, bucket_sum, bucket_count, bucket_means in scored["buckets"]]
            results.append(TaskResult(
                task=item.task, length=item.length,
                metrics={"perplexity": [(value, stderr)]},
                n=scored["blocks"], data_files=scored["files"][:50], data_fingerprint=scored["fingerprint"],
                position_buckets=buckets,
                lm_eval=native_output(f"{item.task}_{item.length}", {"perplexity": (value, stderr)}, scored["rows"],
                                      [{"perplexity": [-sum(row["nll_sum"]), sum(row["count"])]}
                                       for row in scored["rows"]], "next_token_nll")))
        return results
