"""Small BABILong files written for the tests, in RMT-team/babilong's row format (fields input,
question, target), laid out as `eval.py download` writes them: DATA/RMT-team/babilong/<N>k/qaM.jsonl.
Per task and length two rows: bAbI-style facts among filler sentences (a longer filler at longer
lengths, far shorter than the real configs, to keep generation cheap on a CPU)."""
import json
from pathlib import Path

FILLER = "The rain kept falling on the old town while the bells rang. "
# Per task: (facts, question, target) of its two rows.
ROWS = {
    "qa1": [("Mary went to the office. John moved to the kitchen.", "Where is Mary?", "office"),
            ("Sandra travelled to the garden. Sandra went to the hallway.", "Where is Sandra?", "hallway")],
    "qa2": [("John got the milk. John moved to the bedroom.", "Where is the milk?", "bedroom"),
            ("Mary took the apple. Mary went to the garden.", "Where is the apple?", "garden")],
    "qa3": [("Mary took the apple. Mary went to the bathroom. Mary went to the kitchen.",
             "Where was the apple before the kitchen?", "bathroom"),
            ("John got the milk. John went to the office. John went to the hallway.",
             "Where was the milk before the hallway?", "office")],
    "qa4": [("The office is east of the kitchen. The garden is west of the kitchen.",
             "What is the kitchen east of?", "garden"),
            ("The bedroom is north of the hallway.", "What is north of the hallway?", "bedroom")],
    "qa5": [("Fred took the football there. Fred gave the football to Jeff.", "Who did Fred give the football to?",
             "Jeff"),
            ("Bill picked up the milk there. Bill handed the milk to Mary.", "What did Bill give to Mary?", "milk")],
}


def write_babilong(data_dir: Path, lengths=("0k", "4k"), tasks=tuple(ROWS)) -> Path:
    for length in lengths:
        filler = FILLER * (int(length[:-1]) // 4)
        for task in tasks:
            file = Path(data_dir) / "RMT-team" / "babilong" / length / f"{task}.jsonl"
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text("".join(json.dumps({"input": f"{filler}{facts} {filler}", "question": question,
                                                "target": target}) + "\n" for facts, question, target in ROWS[task]))
    return Path(data_dir)
