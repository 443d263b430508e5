"""`forward_autotune` refuses what it cannot time in one line, before touching a GPU."""
import pytest

from path_eval.bench import forward_autotune


def test_an_unknown_case_is_one_line_naming_the_known_ones():
    with pytest.raises(SystemExit, match="--cases 'nope': choose from path D=64 8K chunk with a padding mask"):
        forward_autotune.main(["--cases", "nope"])
