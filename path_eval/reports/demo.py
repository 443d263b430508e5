"""The demo (`python eval.py` with no arguments): a real, offline CPU evaluation of the trained zoo
(path_eval/zoo): NIAH (single_1) and PhoneBook retrieval and held-out perplexity by position at 1x
and 2x the language models' training length for the four language models, and in-distribution
flip-flop error for the four flip-flop models, from the ci suite's tasks.

Its table, the table's caption and the per-position plot's text say only what the run's records
and the models' cards say: every number is read from them, and each word that could turn false
("holds", "below", "the highest") is decided from those numbers, by the threshold `HOLDS_WITHIN`
that the caption states."""
from __future__ import annotations

from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.reports.extrapolation import training_lengths, write_reports
from path_eval.results import ResultRecord
from path_eval.suites import SuiteSpec, load_suite

VARIANTS = ("rope", "fox", "path", "path_fox")
SAMPLES = 3  # per retrieval task and length
TASKS = ["niah_single_1", "phonebook", "heldout", "flipflop_in"]
RETRIEVAL = (("niah_single_1", "NIAH"), ("phonebook", "Phone\nBook"))
# Held-out perplexity after the training length over before it, in the same blocks: a variant
# whose ratio is at most this many times the lowest variant's "holds". The later text of a block is
# harder too, which the ratio of every variant includes (the lowest ratio is the most of the rise
# the text itself can explain), so the verdict compares variants, not a ratio with 1.
HOLDS_WITHIN = 1.10


def zoo_training_length() -> int:
    """The training length of the zoo's language models, from their model cards (one for all four:
    the demo's lengths are 1x and 2x of it)."""
    import json

    from path_eval.models.zoo import zoo_models

    cards = {path.name: json.loads((path / "model_card.json").read_text()) for path in zoo_models()}
    lengths = {cards[v]["training_length"] for v in VARIANTS}
    if len(lengths) != 1:
        raise PathEvalError(f"the zoo's language models were trained at different lengths ({sorted(lengths)}): the "
                            "demo compares them at one; retrain them at one length (path_eval/zoo/train.py)")
    return lengths.pop()


def demo_suite(training_length: int) -> SuiteSpec:
    """The ci suite cut to the demo: the tasks of the demo's models (the language models' at 1x and
    2x `training_length`, flip-flop's as they are), the blocks of the held-out text split into two
    halves (before and after the training length) of at most two blocks, and no caption of its own
    (the run's caption is made from the run)."""
    ci = load_suite("ci")
    lengths = [training_length, 2 * training_length]
    names = {model.removeprefix("zoo:") for model in demo_models()}
    tasks = [t.model_copy(update={"lengths": lengths}) if t.flipflop is None else t for t in ci.tasks
             if names & set(t.models)]
    return ci.model_copy(update={"max_blocks": 2, "bucket_size": training_length, "tasks": tasks,
                                 "training_length": training_length, "caption": None})


def demo_models() -> list[str]:
    return [f"zoo:{v}" for v in VARIANTS] + [f"zoo:flipflop_{v}" for v in VARIANTS]


def intro_line(suite: SuiteSpec) -> str:
    """What the run is about to do, from the suite and the sample limit it runs under."""
    from path_eval.kinds import sample_count

    flipflop = suite.task("flipflop_in")
    short, long = suite.task("heldout").lengths
    retrieval = {sample_count(suite.task(task), suite, SAMPLES) for task, _ in RETRIEVAL}
    return (f"demo: the trained zoo (path_eval/zoo/models) on the CPU: NIAH and PhoneBook retrieval "
            f"({'/'.join(map(str, sorted(retrieval)))} samples per length) and perplexity on held-out text by "
            f"position at {short} and {long} tokens; flip-flop error (p_ignore {flipflop.flipflop.p_ignore}, "
            f"{sample_count(flipflop, suite, SAMPLES)} sequences of {', '.join(map(str, flipflop.lengths))} tokens)")


class DemoRun:
    """The demo's records, read back by (model, task, length, bucket)."""

    def __init__(self, records: list[ResultRecord], suite: SuiteSpec):
        self.records = records
        self.cell = {(r.model, r.task, r.length, tuple(r.bucket or ())): r for r in records}
        heldout = [r for r in records if r.task == "heldout" and r.bucket is None]
        self.short, self.long = sorted({r.length for r in heldout})
        self.before, self.after = sorted({tuple(r.bucket) for r in records
                                          if r.task == "heldout" and r.length == self.long and r.bucket})
        self.trained = training_lengths([r for r in records if r.model in VARIANTS], suite)
        self.flipflop_length = next(r.length for r in records if r.task == "flipflop_in")

    def value(self, model: str, task: str, length: int, bucket: tuple = ()) -> float:
        return self.cell[model, task, length, bucket].value

    def climb(self, variant: str) -> float:
        """Perplexity after the training length over before it, in the same blocks of 2x its length."""
        return self.value(variant, "heldout", self.long, self.after) / self.value(variant, "heldout", self.long,
                                                                                   self.before)

    def flipflop_error(self, variant: str) -> float:
        return self.value(f"flipflop_{variant}", "flipflop_in", self.flipflop_length)

    def table(self):
        from rich.table import Table

        table = Table(title=f"the trained zoo: retrieval and held-out perplexity at {self.short} and {self.long} "
                            "tokens")
        table.add_column("variant")
        for _, label in RETRIEVAL:
            for length in (self.short, self.long):
                table.add_column(f"{label}\n@{length}", justify="right")
        for first, last in (self.before, self.after):
            table.add_column(f"ppl\n@{self.long}\n{first}-\n{last}", justify="right")
        table.add_column(f"flip-\nflop\nerror\n@{self.flipflop_length}", justify="right")
        for variant in VARIANTS:
            table.add_row(variant, *(f"{100 * self.value(variant, task, n):.0f}%" for task, _ in RETRIEVAL
                                     for n in (self.short, self.long)),
                          *(f"{self.value(variant, 'heldout', self.long, b):.1f}" for b in (self.before, self.after)),
                          f"{100 * self.flipflop_error(variant):.1f}%")
        table.caption = self.caption()
        return table

    def caption(self) -> str:
        """What the table shows, every number and verdict from the run (`HOLDS_WITHIN`)."""
        trained = sorted({n for n in self.trained.values() if n is not None})
        first, last = self.after
        blocks = self.cell[VARIANTS[0], "heldout", self.long, ()].n
        samples = self.cell[VARIANTS[0], RETRIEVAL[0][0], self.short, ()].n
        climbs = {v: self.climb(v) for v in VARIANTS}
        held = [v for v in VARIANTS if climbs[v] <= HOLDS_WITHIN * min(climbs.values())]  # the lowest holds
        rope, path = self.flipflop_error("rope"), self.flipflop_error("path")
        sequences = self.cell["flipflop_rope", "flipflop_in", self.flipflop_length, ()].n
        ratios = sorted(VARIANTS, key=lambda v: climbs[v])
        lowest, highest = ratios[0], ratios[-1]
        return (f"Language models trained at {' and '.join(map(str, trained))} tokens (their model cards). "
                f"Held-out perplexity at positions {first}-{last} over {self.before[0]}-{self.before[1]}, in the "
                f"same {blocks} blocks of {self.long} tokens: "
                + ", ".join(f"{v} {climbs[v]:.2f}x" for v in VARIANTS)
                + f"; within {HOLDS_WITHIN:.2f}x of the lowest counts as holding: "
                + f"{', '.join(held)} hold{'s' if len(held) == 1 else ''}"
                + f"; the highest, {highest}'s, is {climbs[highest] / climbs[lowest]:.2f}x the lowest, "
                f"{lowest}'s; every ratio includes that the blocks' later text is also harder. Flip-flop error over "
                f"{sequences} sequences: PaTH {100 * path:.1f}%, {'below' if path < rope else 'not below'} RoPE's "
                f"{100 * rope:.1f}%. The paper expects RoPE to fail "
                "past its training length while FoX and PaTH-FoX hold, and PaTH's flip-flop error below RoPE's "
                f"(paper: 0% vs 6.9%). {samples} samples per retrieval cell: `eval.py run --suite zoo_study` "
                "measures the same with enough samples to test the differences.")

    def plot_caption(self) -> str:
        """The per-position plot's text: the same ratios, from the same records."""
        climbs = ", ".join(f"{v} {self.climb(v):.2f}x" for v in VARIANTS)
        return (f"Perplexity at {self.after[0]}-{self.after[1]} over {self.before[0]}-{self.before[1]} in blocks of "
                f"{self.long} tokens: {climbs}.")


def write_demo_reports(run: DemoRun, suite: SuiteSpec, out: Path) -> list[Path]:
    """The per-position reports of the run, its plot captioned with the run's own ratios."""
    return write_reports(run.records, suite.model_copy(update={"caption": run.plot_caption()}), out)
