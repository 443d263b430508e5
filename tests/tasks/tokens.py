"""Token counting for the generator tests: the prompt as the model reads it, without BOS."""


def tokens(tokenizer, text: str) -> int:
    return len(tokenizer.encode(text, add_special_tokens=False))
