"""The trained zoo's data, `models/` and `heldout/`; `path_eval.models.zoo` finds the checkpoints."""
