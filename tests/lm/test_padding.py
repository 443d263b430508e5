"""Padded batches against their definition: each row's ids at its end (left padding) or its start
(right padding), pad_id and mask 0 elsewhere."""
import random

import numpy as np
import pytest
import torch

from path_eval.lm.padding import padded_batch


def definition(rows, pad_id, left):
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros(len(rows), width, dtype=torch.long)
    for b, row in enumerate(rows):
        start = width - len(row) if left else 0
        for j, token in enumerate(row):
            ids[b, start + j] = token
            mask[b, start + j] = 1
    return ids, mask


@pytest.mark.parametrize("left", [True, False])
def test_padded_batch_is_the_definition(left):
    rng = random.Random(0)
    for _ in range(20):
        rows = [[rng.randrange(50_000) for _ in range(rng.choice([0, 1, 7, 300]))] for _ in range(rng.randint(1, 6))]
        if not any(rows):
            rows[0] = [3]
        want_ids, want_mask = definition(rows, 31999, left)
        for given in (rows, [np.asarray(row, dtype=np.int32) for row in rows]):  # the prompts come as arrays
            ids, mask = padded_batch(given, 31999, left)
            assert ids.dtype == mask.dtype == torch.long
            assert torch.equal(ids, want_ids) and torch.equal(mask, want_mask)
