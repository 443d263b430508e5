"""Test helper: result records with a complete provenance, varied where a test needs it."""
from path_eval.results import Provenance, ResultRecord

PROVENANCE = dict(model_path="/m", model_type="path_attn", variant="path", config_sha256="c", weights_sha256="w",
                  tokenizer="t", tokenizer_sha256="tok", data_fingerprint="d", data_files=["f"], seed=1234,
                  limit=None, num_fewshot=0, max_length=2048, dtype="float32", device="cpu",
                  attention_backend="torch", batch_size=1, harness_version="0.1.0", git_revision=None,
                  lm_eval_version="0.4.13", torch_version="2", transformers_version="5", python_version="3.11",
                  hostname="h", started_at="now", wall_time_s=1.0, tokens=1, tokens_per_second=1.0,
                  truncated_requests=0, requests_computed=1)


def records(acc=0.55, ppl=18.0, model="m", acc_stderr=0.01, **provenance):
    p = Provenance(**(PROVENANCE | provenance))
    return [ResultRecord(suite="table2", model=model, task="piqa", length=None, metric="acc", value=acc,
                         stderr=acc_stderr, n=1838, higher_is_better=True, provenance=p),
            ResultRecord(suite="table2", model=model, task="wikitext", length=None, metric="word_perplexity",
                         value=ppl, stderr=None, n=62, higher_is_better=False, provenance=p)]
