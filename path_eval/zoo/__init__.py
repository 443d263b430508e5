"""The trained small-model zoo: its training data (`corpus`), the flip-flop language (`flipflop`),
its tokenizer (`tokenizer`), the training script (`train`) and the checkpoints under `models/`."""
