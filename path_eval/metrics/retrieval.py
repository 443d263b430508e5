"""RULER's and PhoneBook's per-sample scores, as the originals compute them."""
from __future__ import annotations

import re

# NVIDIA/RULER scripts/eval/synthetic/constants.py `postprocess_pred`: strip, turn every control
# character (0x00-0x1f) into a newline, strip again.
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f]")


def ruler_postprocess(prediction: str) -> str:
    return _CONTROL_CHARACTERS.sub("\n", prediction.strip()).strip()


def string_match_all(prediction: str, references: list[str]) -> float:
    """RULER's metric for NIAH, vt, cwe and fwe: the fraction of references found in the prediction
    as case-insensitive substrings (0..1; RULER reports it x100)."""
    text = ruler_postprocess(prediction).lower()
    return sum(reference.lower() in text for reference in references) / len(references)


def string_match_part(prediction: str, references: list[str]) -> float:
    """RULER's metric for QA: 1 if any reference is found (case-insensitive substring), else 0."""
    text = ruler_postprocess(prediction).lower()
    return float(any(reference.lower() in text for reference in references))


def phonebook_exact_match(prediction: str, answer: str) -> float:
    """ArchScale's PhoneBook score: the generation's first line, stripped, equals the number."""
    return float(prediction.split("\n")[0].strip() == answer)
