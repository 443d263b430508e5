"""A checkpoint's chat templates, read from its files before anything loads, and the one way a chat
is rendered through them (lm-eval's hf model's, which the adapter and the generated tasks share).

Where transformers finds them (`PreTrainedTokenizerBase.from_pretrained`): `chat_template.jinja`
(the template named "default") and `additional_chat_templates/NAME.jinja` win over
`tokenizer_config.json`'s `chat_template`, a string (one template, "default") or a list of
`{name, template}`. A checkpoint without tokenizer files reads the Mistral v1 tokenizer, which has
none; so does every checkpoint of the zoo.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from path_eval.errors import PathEvalError

DEFAULT = "default"  # transformers' name for a tokenizer's single (or main) template
TEMPLATE_FILE = "chat_template.jinja"
TEMPLATE_FOLDER = "additional_chat_templates"
CONFIG_FILE = "tokenizer_config.json"


class ChatTemplate(BaseModel):
    """The template a run applies for one model: its name among the tokenizer's and the sha256 of
    its text (what plan.json and the records keep; the text stays in the checkpoint)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    sha256: str


def template_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chat_templates(checkpoint: Path) -> dict[str, str]:
    """The checkpoint's templates by name, as transformers loads them with its tokenizer (empty: none)."""
    checkpoint = Path(checkpoint)
    found: dict[str, str] = {}
    if (checkpoint / TEMPLATE_FILE).is_file():
        found[DEFAULT] = (checkpoint / TEMPLATE_FILE).read_text(encoding="utf-8")
    if (checkpoint / TEMPLATE_FOLDER).is_dir():
        for file in sorted((checkpoint / TEMPLATE_FOLDER).glob("*.jinja")):
            found[file.stem] = file.read_text(encoding="utf-8")
    if found:
        return found
    try:
        config = json.loads((checkpoint / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}  # no config, or one the tokenizer's own reader names as broken when it loads
    template = config.get("chat_template") if isinstance(config, dict) else None
    if isinstance(template, str):
        return {DEFAULT: template}
    if isinstance(template, list):
        return {entry["name"]: entry["template"] for entry in template
                if isinstance(entry, dict) and isinstance(entry.get("name"), str)
                and isinstance(entry.get("template"), str)}
    return {}


def select_chat_template(checkpoint: Path, model: str, name: str | None) -> tuple[ChatTemplate, str]:
    """(the template `--apply-chat-template [NAME]` picks for `model`, its text), as lm-eval's
    `TemplateLM.chat_template` resolves it: NAME among the tokenizer's templates, else its "default";
    one line where the checkpoint has none, or not the one named."""
    templates = chat_templates(checkpoint)
    if not templates:
        raise PathEvalError(
            f"model {model} has no chat template ({checkpoint} holds no {TEMPLATE_FILE} and its {CONFIG_FILE} no "
            "chat_template; a checkpoint without tokenizer files reads the Mistral v1 tokenizer, which has none): "
            f"drop --apply-chat-template for a base model, or add the template the model was trained with "
            f"(\"chat_template\" in {CONFIG_FILE}, or a {TEMPLATE_FILE} file)")
    wanted = name or DEFAULT
    if wanted not in templates:
        if name is None:
            raise PathEvalError(f"model {model} has several chat templates and none named {DEFAULT!r}: give one of "
                                f"{', '.join(sorted(templates))} to --apply-chat-template")
        raise PathEvalError(f"model {model} has no chat template named {name!r}: its templates are "
                            f"{', '.join(sorted(templates))}")
    return ChatTemplate(name=wanted, sha256=template_sha256(templates[wanted])), templates[wanted]


def render_chat(tokenizer, template: str, chat_history: list[dict[str, str]],
                add_generation_prompt: bool = True) -> str:
    """`chat_history` through `template` as lm-eval's hf model renders it (0.4.13's
    `HFLM.apply_chat_template`): the generation prompt opened, else the last message continued;
    where the template refuses a system turn (a jinja TemplateError), the chat without it."""
    import jinja2

    def render(history):
        return tokenizer.apply_chat_template(history, chat_template=template, tokenize=False,
                                             add_generation_prompt=add_generation_prompt,
                                             continue_final_message=not add_generation_prompt)

    try:
        return render(chat_history)
    except jinja2.exceptions.TemplateError:
        return render([message for message in chat_history if message["role"] != "system"])


class ChatLayout:
    """How a chat model is asked a prompt: the text in the user turn (after the system instruction, if
    any), rendered through `template` up to and including the assistant's header; the caller appends
    an answer prefix. `template_sha256` and `system_instruction` are what changes the prompts."""

    def __init__(self, tokenizer, template: str, system_instruction: str | None = None):
        self.tokenizer, self.template, self.system_instruction = tokenizer, template, system_instruction
        self.template_sha256 = template_sha256(template)

    def user_turn(self, text: str) -> str:
        return render_chat(self.tokenizer, self.template, user_messages(text, self.system_instruction))


def user_messages(text: str, system_instruction: str | None) -> list[dict[str, str]]:
    """A one-question chat: the system instruction (if any), then `text` from the user."""
    system = [{"role": "system", "content": system_instruction}] if system_instruction else []
    return [*system, {"role": "user", "content": text}]
