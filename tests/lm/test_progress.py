"""The request progress bar: counts, tokens per second from the adapter's counters, off under --quiet."""
from types import SimpleNamespace

from path_eval.locations import PROGRESS_VARIABLE
from path_eval.lm.progress import RequestProgress


def test_progress_counts_and_rate(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.delenv(PROGRESS_VARIABLE, raising=False)
    lm = SimpleNamespace(tokens_processed=0, seconds=0.0)
    with RequestProgress(lm, "generate_until", 4) as bar:
        assert bar.enabled
        lm.tokens_processed, lm.seconds = 3000, 2.0
        bar.advance(3)
        task = bar.progress.tasks[0]
        assert task.completed == 3 and task.total == 4 and task.fields["rate"] == "1,500 tok/s"


def test_the_command_lines_setting_wins_over_tqdms(monkeypatch):
    """A run without --verbose hides lm-eval's tqdm bars (TQDM_DISABLE) and shows this one."""
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.setenv(PROGRESS_VARIABLE, "1")
    assert RequestProgress(SimpleNamespace(tokens_processed=0, seconds=0.0), "loglikelihood", 10).enabled


def test_quiet_disables_the_bar(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", "1")
    monkeypatch.delenv(PROGRESS_VARIABLE, raising=False)
    lm = SimpleNamespace(tokens_processed=0, seconds=0.0)
    with RequestProgress(lm, "loglikelihood", 10) as bar:
        assert not bar.enabled
        bar.advance()
