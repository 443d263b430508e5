"""`forward_autotune`, `forward_profile` and `scoring_profile` refuse what they cannot time in one line, before touching
a GPU."""
import pytest

from benchmarks import forward_autotune, forward_profile, scoring_profile


def test_an_unknown_case_is_one_line_naming_the_known_ones():
    with pytest.raises(SystemExit, match="--cases 'nope': choose from path D=64 8K chunk with a padding mask"):
        forward_autotune.main(["--cases", "nope"])


def test_a_head_dim_or_length_the_profile_has_no_shape_for_is_one_line():
    with pytest.raises(SystemExit, match="^--head-dims 64,32: choose from 64, 128$"):
        forward_profile.main(["--head-dims", "64,32"])
    with pytest.raises(SystemExit, match="^--lengths 8192,5000: give token counts that divide 65536"):
        forward_profile.main(["--lengths", "8192,5000"])


def test_a_model_the_scoring_profile_cannot_build_is_one_line():
    with pytest.raises(SystemExit, match="^--models path,llama: choose from path, path_fox, fox, rope-sdpa, fla-path$"):
        scoring_profile.main(["--models", "path,llama"])
    with pytest.raises(SystemExit, match="^--length 1: score a block of at least 2 tokens$"):
        scoring_profile.main(["--length", "1"])


def test_a_negative_batch_or_head_count_for_the_kernels_bench_is_one_line(capsys):
    from benchmarks import kernels

    with pytest.raises(SystemExit):
        kernels.main(["--parts", "forward", "--batch", "-1"])
    assert "--batch and --heads take counts of 1 or more (0: the defaults), not -1, 0" in capsys.readouterr().err
