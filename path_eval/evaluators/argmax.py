"""The model's most likely next token at every position of whole sequences, one teacher-forced
forward per batch: what the synthetic tasks (flip-flop, token tagging) score. Each batch's answer is
kept in the model's resume cache as it is computed."""
from __future__ import annotations

import numpy as np
import torch

from path_eval.lm.request_cache import ARGMAX

BATCH = 32  # sequences per forward


@torch.inference_mode()
def argmax_predictions(lm, tokens: np.ndarray) -> np.ndarray:
    """predictions[n, t]: the model's most likely token after tokens[n, :t + 1]. Under data
    parallelism the batches are shared between the processes (the same batches as one process)."""
    starts = range(0, len(tokens), BATCH)

    def forward(batch: np.ndarray) -> np.ndarray:
        return lm.timed(lambda b: lm.model(torch.as_tensor(b, device=lm.device)).logits.argmax(-1).cpu().numpy(),
                        batch, tokens=batch.size)

    def predict(indices: list[int]) -> list[np.ndarray]:
        batches = [tokens[starts[i]:starts[i] + BATCH] for i in indices]
        if lm.request_cache is None:
            return [forward(batch) for batch in batches]
        # each finished batch is kept: a killed run started again recomputes none of them
        return [lm.request_cache.answer_batch(ARGMAX, batch, forward) for batch in batches]

    if lm.parallel is None:
        return np.concatenate(predict(list(range(len(starts)))))
    return np.concatenate(lm.parallel.shared_answers([tokens[s:s + BATCH].size for s in starts], predict))
