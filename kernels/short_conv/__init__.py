"""PaTH's Householder directions (causal depthwise convolution, silu, per-head l2 norm): one Triton
launch (`fused`) for what the model computes in torch (`naive`)."""
