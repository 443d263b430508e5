"""What the Triton kernels take, importable without triton: the model's default-backend choice
(`path_eval.models.attention.default_backend`) reads it as `path_attention` checks it."""
import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
HEAD_DIMS = (16, 32, 64, 128)  # tl.arange needs a power of two; 128 is the largest that fits shared memory
