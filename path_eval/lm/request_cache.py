"""The resume cache: each finished request of one model, one sqlite row, committed as it or its batch
is computed, so that a killed run started again recomputes nothing it had finished. Work that is no lm-eval
request is kept here too: a batch of the argmax forward (flip-flop, token tagging) is a row
(`answer_batch`); corpus blocks are kept beside their per-sample log (`path_eval.evaluators.corpus`).

lm-eval's own request cache (`use_cache`, a SqliteDict) stores pickles, and unpickling a row can run
arbitrary code: a run folder copied from someone else could execute commands on resume. Rows here
are JSON (log-likelihoods, greedy flags, generated text, a batch's integers packed as base64), so
reading one can only ever give data.
Keys are lm-eval's (`hash_args` of the request kind and arguments), so a request is found again
whatever order or batch it comes in.

Each start of the same command is a segment; the cache also keeps every segment's work counters
(tokens, seconds, requests, wall time), committed with each request, so that the provenance of a
resumed run totals all of its segments. Once the results are written they are forgotten: running
the finished command again is a new run (which computes nothing)."""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

import numpy as np
from lm_eval.api.model import hash_args

from path_eval.atomic_files import refuse_link
from path_eval.errors import PathEvalError

TABLE = "requests"
SEGMENTS = "segments"
PICKLED_TABLE = "unnamed"  # SqliteDict's default table: lm-eval's pickled cache
# Work that is no lm-eval request, stored as a batch of sequences' answers (`RequestCache.answer_batch`).
ARGMAX = "next_token_argmax"
BATCH_KINDS = (ARGMAX,)


class RequestCache:
    """JSON rows keyed by request; also lm-eval's cache hook (`add_partial`), which the adapter
    calls as each request is computed."""

    def __init__(self, path: Path, progress: Callable[[], dict] | None = None):
        """progress: this segment's counters so far, stored with each request."""
        self.path = Path(path)
        self.progress = progress
        self.segment: int | None = None
        self.answered = self.reused = 0  # requests answered in this segment, and those read back from the file
        self._batch_rows: int | None = None  # inside `one_commit`: the rows waiting for its end
        self._unstored: dict[tuple[str, int], list[tuple[tuple, str]]] = {}  # (kind, id(args[0])) -> [(args, key)]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        refuse_link(self.path)  # sqlite would open (or create) the file a link points at
        try:
            self.connection = sqlite3.connect(self.path)
            tables = {row[0] for row in self.connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        except sqlite3.DatabaseError as err:
            raise PathEvalError(f"resume cache {self.path} is not a readable sqlite file ({err}): delete it "
                                "to recompute its requests") from None
        if PICKLED_TABLE in tables:
            self.connection.close()
            raise PathEvalError(f"resume cache {self.path} holds pickled rows (lm-eval's format, written by an "
                                "older path-eval), which could run code when read: delete it to recompute its "
                                "requests")
        with self._writing():
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {SEGMENTS} (id INTEGER PRIMARY KEY, "
                                    "counters TEXT NOT NULL)")
            self.connection.commit()

    @contextmanager
    def _writing(self):
        """One line where sqlite cannot write the file: its folder removed during the run (sqlite says
        "readonly database"), a full disk or the file-size limit (`ulimit -f`: "disk I/O error").
        The rows committed before stay, for the same command to resume from."""
        try:
            yield
        except sqlite3.OperationalError as err:
            if not self.path.is_file():
                raise PathEvalError(f"resume cache {self.path} was removed during the run (with its run folder?), "
                                    "and the requests it had finished with it: start the run again") from None
            raise PathEvalError(f"resume cache {self.path} cannot be written ({err}): free space on its disk or "
                                "raise the file-size limit (ulimit -f), then run the same command again: it "
                                "resumes from the requests saved so far") from None

    def key(self, kind: str, args) -> str:
        """lm-eval's `hash_args(kind, args)`, made once per request: `answer` looks a request up by
        it and the model stores the request's answer under it, and hashing means writing the prompt
        out as JSON (16K tokens of text, about 60 KB). A request `answer` did not find keeps its key
        until it is stored, beside its arguments, which must equal those stored (equal arguments,
        equal key), since an object's id can be another object's once the first is gone; requests
        that share their first argument (a multiple-choice doc's choices share its context) are kept
        side by side."""
        kept = self._unstored.get((kind, id(args[0]))) if args else None
        for index, (stored_args, key) in enumerate(kept or []):
            if stored_args == args:
                del kept[index]
                if not kept:
                    del self._unstored[(kind, id(args[0]))]
                return key
        return hash_args(kind, args)

    def get(self, kind: str, args) -> object | None:
        return self._stored(self.key(kind, args), kind)

    def _stored(self, key: str, kind: str) -> object | None:
        row = self.connection.execute(f"SELECT value FROM {TABLE} WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except (TypeError, ValueError, RecursionError):  # not text, not JSON, or nested past Python's limit
            raise self._corrupt() from None
        if not answer_shaped(kind, value):
            raise self._corrupt()
        return tuple(value) if kind == "loglikelihood" else value  # (log-likelihood, is_greedy)

    def add_partial(self, kind: str, args, result) -> None:
        """Store one finished request (committed at once, or inside `one_commit` at its end: a kill
        loses at most the request or the batch in hand)."""
        with self._writing():
            self.connection.execute(f"INSERT OR REPLACE INTO {TABLE} VALUES (?, ?)",
                                    (self.key(kind, args), json.dumps(result)))
            if self._batch_rows is not None:
                self._batch_rows += 1
            else:
                self._store_segment()
                self.connection.commit()

    @contextmanager
    def one_commit(self):
        """The requests stored inside committed together, with the counters, when it ends (also on an
        error: they are finished answers); nothing is committed when none was stored (a rolling
        document's windows: their counters go with the document's row). A batch's requests are
        finished together, and a commit waits for the disk, which the GPU would wait out with
        nothing queued."""
        self._batch_rows = 0
        try:
            yield
        finally:
            rows, self._batch_rows = self._batch_rows, None
            if rows:
                self.save_progress()

    def save_progress(self) -> None:
        """Commit this segment's counters (work that is not a cached request: corpus blocks)."""
        with self._writing():
            self._store_segment()
            self.connection.commit()

    def _store_segment(self) -> None:
        if self.progress is None:
            return
        counters = json.dumps(self.progress())
        if self.segment is None:
            self.segment = self.connection.execute(f"INSERT INTO {SEGMENTS} (counters) VALUES (?)",
                                                   (counters,)).lastrowid
        else:
            self.connection.execute(f"UPDATE {SEGMENTS} SET counters = ? WHERE id = ?", (counters, self.segment))

    def finish_run(self) -> None:
        """Forget the segments' counters once the run's results are written (its requests stay)."""
        with self._writing():
            self.connection.execute(f"DELETE FROM {SEGMENTS}")
            self.connection.commit()
        self.connection.close()

    def earlier_segments(self) -> list[dict]:
        """The counters of the runs of this command before this one (killed or finished)."""
        rows = self.connection.execute(f"SELECT id, counters FROM {SEGMENTS} ORDER BY id").fetchall()
        try:
            counters = [json.loads(counters) for id_, counters in rows if id_ != self.segment]
        except (TypeError, ValueError, RecursionError):
            raise self._corrupt() from None
        if not all(isinstance(c, dict) for c in counters):
            raise self._corrupt()
        return counters

    def _corrupt(self) -> PathEvalError:
        return PathEvalError(f"resume cache {self.path} has a corrupt row: delete the file to recompute its requests "
                             "(or give another --out)")

    def answer(self, kind: str, requests: list, compute: Callable[[list], list]) -> list:
        """Results of `requests` in order: stored ones read back, the rest computed in one call.
        Sampled generations are never reused (repeats must differ), as in lm-eval's cache."""
        keys = [hash_args(kind, r.args) for r in requests]
        results = [None if _sampled(kind, r.args) else self._stored(key, kind) for r, key in zip(requests, keys)]
        missing = [r for r, result in zip(requests, results) if result is None]
        for r, key, result in zip(requests, keys, results):
            if result is None and r.args:
                self._unstored.setdefault((kind, id(r.args[0])), []).append((r.args, key))
        self.answered += len(requests)
        self.reused += len(requests) - len(missing)
        computed = iter(compute(missing) if missing else [])
        return [next(computed) if result is None else result for result in results]

    def answer_batch(self, kind: str, tokens: np.ndarray, compute: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """`compute(tokens)`, an integer per token (the argmax forward of flip-flop and token
        tagging: `BATCH_KINDS`), read back when this batch of sequences was finished before, else
        computed and stored; keyed by the tokens themselves, so a batch is found again whatever item
        or order it comes in."""
        key = (hashlib.sha256(np.ascontiguousarray(tokens).tobytes()).hexdigest(), list(tokens.shape), str(tokens.dtype))
        stored = self.get(kind, key)
        self.answered += 1
        if stored is not None:
            try:
                found = unpacked_integers(stored)
            except (ValueError, OverflowError):  # an earlier version's list: ragged, or past int64
                raise self._corrupt() from None
            if found.shape != tokens.shape:
                raise self._corrupt()
            self.reused += 1
            return found
        result = compute(tokens)
        self.add_partial(kind, key, packed_integers(result))
        return result

    def __len__(self) -> int:
        return self.connection.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]


def saved_requests(folder: Path) -> int:
    """The requests finished in the resume caches of `folder` (read-only: another process may hold them)."""
    total = 0
    for file in sorted(Path(folder).glob("*.db")):
        try:
            with sqlite3.connect(f"file:{file}?mode=ro", uri=True, timeout=1) as db:
                total += db.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]
        except sqlite3.Error:
            continue
    return total


PACKED_TYPES = ("<i4", "<i8")  # a batch row's integers: little-endian int32, or int64 where one does not fit


def packed_integers(values: np.ndarray) -> dict:
    """A batch's integers per token as a row: their little-endian bytes in base64 (int32, int64 where
    a value does not fit), beside their shape and type, which JSON writes at the speed of copying (a
    JSON list of a batch of 32 x 4096 flip-flop predictions took about 8 ms to write on a 2-core CPU,
    3.8 s over the zoo study's four flip-flop models, `benchmarks.host_cost`)."""
    values = np.asarray(values)
    if not (np.issubdtype(values.dtype, np.integer) or values.dtype == bool):
        raise TypeError(f"a batch row holds integers, not {values.dtype}")
    fits = not values.size or (values.min() >= -2**31 and values.max() < 2**31)
    dtype = PACKED_TYPES[0] if fits else PACKED_TYPES[1]
    return {"shape": list(values.shape), "dtype": dtype,
            "base64": base64.b64encode(values.astype(dtype).tobytes()).decode("ascii")}


def unpacked_integers(value) -> np.ndarray:
    """A batch row as int64: `packed_integers`' (checked by `answer_shaped`), or a JSON list of lists,
    as earlier versions stored every row."""
    if isinstance(value, dict):
        return np.frombuffer(base64.b64decode(value["base64"]), dtype=value["dtype"]).reshape(
            value["shape"]).astype(np.int64)
    return np.asarray(value, dtype=np.int64)


def _packed_row(value) -> bool:
    """A well-formed `packed_integers` row: at most 32 dimensions of counts, a packed type, and
    base64 of exactly that many values of it."""
    if not (isinstance(value, dict) and set(value) == {"shape", "dtype", "base64"}
            and value["dtype"] in PACKED_TYPES and isinstance(value["base64"], str)
            and isinstance(value["shape"], list) and len(value["shape"]) <= 32
            and all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n < 2**40 for n in value["shape"])):
        return False
    try:
        data = base64.b64decode(value["base64"], validate=True)
    except (binascii.Error, ValueError):
        return False
    return len(data) == np.dtype(value["dtype"]).itemsize * math.prod(value["shape"])


def answer_shaped(kind: str, value) -> bool:
    """Whether a stored row is an answer to a request of `kind`, as lm-eval returns it: a
    (log-likelihood, is_greedy) pair, a summed log-likelihood, or generated text."""
    def number(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if kind == "loglikelihood":
        return isinstance(value, list) and len(value) == 2 and number(value[0]) and isinstance(value[1], bool)
    if kind == "loglikelihood_rolling":
        return number(value)
    if kind == "generate_until":
        return isinstance(value, str)
    if kind in BATCH_KINDS:  # an integer per token of each sequence: packed, or lists (earlier versions)
        return _packed_row(value) or isinstance(value, list) and all(
            isinstance(row, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in row) for row in value)
    return True


def _sampled(kind: str, args) -> bool:
    return kind == "generate_until" and bool(args[1].get("do_sample", False))
