"""RMSNorm: one Triton launch (`fused`) for what the model's norms compute in torch (`naive`)."""
