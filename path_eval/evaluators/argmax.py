"""The model's most likely next token at every position of whole sequences, one teacher-forced
forward per batch: what the synthetic tasks (flip-flop, token tagging) score."""
from __future__ import annotations

import numpy as np
import torch

BATCH = 32  # sequences per forward


@torch.inference_mode()
def argmax_predictions(lm, tokens: np.ndarray) -> np.ndarray:
    """predictions[n, t]: the model's most likely token after tokens[n, :t + 1]. Under data
    parallelism the batches are shared between the processes (the same batches as one process)."""
    starts = range(0, len(tokens), BATCH)

    def predict(indices: list[int]) -> list[np.ndarray]:
        batches = [tokens[starts[i]:starts[i] + BATCH] for i in indices]
        return [lm.timed(lambda b: lm.model(torch.as_tensor(b, device=lm.device)).logits.argmax(-1).cpu().numpy(),
                         batch, tokens=batch.size) for batch in batches]

    if lm.parallel is None:
        return np.concatenate(predict(list(range(len(starts)))))
    return np.concatenate(lm.parallel.shared_answers([tokens[s:s + BATCH].size for s in starts], predict))
