"""Markdown pieces the `render_*` functions of the benchmark and training scripts share: a table,
number formats, and the line that names a block's JSON and machine."""
from __future__ import annotations

from pathlib import Path


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def sci(x: float | None) -> str:
    return "-" if x is None else f"{x:.1e}"


def kilo(tokens: int) -> str:
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)


def ratio(x: float) -> str:
    return f"{x:.2f}x"


def seconds(x) -> str:
    return "-" if x is None else f"{x:.1f}"


def percent(x: float) -> str:
    return f"{100 * x:.4g}%"


def source(path: Path, results: Path) -> str:
    return f"`results/{path.relative_to(results).as_posix()}`"


def machine_line(**fields) -> str:
    return "Machine: " + ", ".join(f"{k} {v}" for k, v in fields.items() if v is not None) + "."


def kernel_source(path: Path, results: Path, data: dict) -> str:
    """The source line of a kernel bench's JSON (their flat layout: machine and versions at the top)."""
    return (f"Source: {source(path, results)}. "
            + machine_line(GPU=data.get("machine"), torch=data.get("torch"), triton=data.get("triton"),
                           fla=data.get("fla")))


def load(path: Path):
    """A committed JSON record; `.json.xz` ones (large training summaries) decompressed."""
    from path_eval.results.store import parse_json_file

    return parse_json_file(path)
