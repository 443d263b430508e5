"""Checkpoints with chat templates for the chat tests, made at test time (never committed): a tiny
random Llama (transformers' LlamaForCausalLM, a few hundred KB of weights) with the Mistral v1
tokenizer path-eval ships, and a zoo checkpoint copied with a template added to its tokenizer config."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch

# A ChatML-style template: the system and user turns, then the assistant's header.
CHATML = ("{{ bos_token }}{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
          "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Mistral's own style, which refuses a system turn (lm-eval then drops it).
INST = ("{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}"
        "{{ raise_exception('no system role') }}{% elif message['role'] == 'user' %}[INST] {{ message['content'] }} "
        "[/INST]{% else %}{{ message['content'] }}{{ eos_token }}{% endif %}{% endfor %}")


def tokenizer_files(path: Path, chat_template=CHATML) -> None:
    """The Mistral v1 tokenizer in `path`, its config holding `chat_template` (a string, or a list of
    {name, template}; None: no template)."""
    from path_eval.models.tokenizer import mistral_v1_directory

    source = mistral_v1_directory()
    shutil.copy(source / "tokenizer.model", path)
    config = json.loads((source / "tokenizer_config.json").read_text())
    if chat_template is not None:
        config["chat_template"] = chat_template
    (path / "tokenizer_config.json").write_text(json.dumps(config))


def chat_llama(path: Path, chat_template=CHATML, max_position_embeddings: int = 4096) -> Path:
    """A tiny random Llama (hidden 8, tied embeddings, bf16 weights: about 520 KB) with the template."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=32000, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True,
                                         max_position_embeddings=max_position_embeddings))
    model.to(torch.bfloat16).save_pretrained(path)
    tokenizer_files(path, chat_template)
    return path


def chat_zoo_model(path: Path, name: str, chat_template=CHATML) -> Path:
    """Zoo checkpoint `name` copied to `path`, its own tokenizer's config holding a template."""
    from path_eval.models.zoo import zoo_models

    shutil.copytree(zoo_models(name)[0], path)
    config = json.loads((path / "tokenizer_config.json").read_text())
    (path / "tokenizer_config.json").write_text(json.dumps(config | {"chat_template": chat_template}))
    return path
