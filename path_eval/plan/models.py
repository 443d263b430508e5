"""Model references: what `--model` (and the Python API) accepts, resolved to local checkpoint
folders before anything loads.

A reference is a local folder, `zoo:NAME` (`zoo`: the whole trained zoo), or a Hugging Face hub id
`org/name` with an optional revision `org/name@rev` (branch, tag or commit), read from the standard
hub cache (HF_HUB_CACHE); `NAME=REFERENCE` gives it a display name. An existing folder always wins,
so a relative path `org/name` that exists is that folder. Resolving never uses the network: a hub
model missing from the cache is one line naming `python eval.py download --model ...`, the one
command that fetches (`fetch_hub_model`)."""
from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from path_eval.errors import PathEvalError
from path_eval.plan.names import check_name, shown

# The hub's own rule for repo ids (letters, digits, - _ . ; one slash), and a revision after `@`.
HUB_ID = re.compile(r"(?P<repo>[A-Za-z0-9][\w.-]*/[\w.-]+)(?:@(?P<revision>[\w./-]+))?")
DISPLAY_NAME = re.compile(r"[^=/\s]+")


class ModelReference(BaseModel):
    """One model of a run: its display name (in every table, and what `check` matches), the local
    folder it loads from, the reference as given, and for a hub model the commit its snapshot holds."""

    model_config = ConfigDict(extra="forbid")
    name: str
    path: Path
    source: str
    revision: str | None = None


def download_command(repo: str, revision: str | None) -> str:
    return f"python eval.py download --model {repo}{'@' + revision if revision else ''}"


def hub_snapshot(repo: str, revision: str | None, download: bool = False) -> Path:
    """The local snapshot folder of hub model `repo` at `revision` (default main): from the cache
    only, unless `download`."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, HfHubHTTPError, LocalEntryNotFoundError

    wanted = f"{repo}@{revision or 'main'}"
    try:
        return Path(snapshot_download(repo, revision=revision, local_files_only=not download))
    except LocalEntryNotFoundError:
        if download:
            raise PathEvalError(f"hub model {wanted} could not be fetched: check the network (HF_HUB_OFFLINE must "
                                "be unset for download) and the repo id") from None
        given = f"{repo}{'@' + revision if revision else ''}"
        raise PathEvalError(f"{given} is no folder here, and hub model {wanted} is not in the Hugging Face cache "
                            "(HF_HUB_CACHE): give the path of an existing checkpoint folder, or fetch the hub model "
                            f"once with `{download_command(repo, revision)}` (needs internet)") from None
    except HFValidationError as err:
        raise PathEvalError(f"{repo} is not a valid hub id ({str(err).splitlines()[0]}): give org/name[@revision]") \
            from None
    except HfHubHTTPError as err:
        raise PathEvalError(f"hub model {wanted}: {str(err).splitlines()[0]}: check the repo id, the revision and "
                            "your token (`hf auth login` for a gated or private repo)") from None


def fetch_hub_model(reference: str) -> ModelReference:
    """`download --model org/name[@rev]`: the snapshot fetched into the standard hub cache."""
    name, target = split_display_name(reference)
    match = HUB_ID.fullmatch(target)
    if match is None:
        raise PathEvalError(f"download --model {reference}: give a hub id org/name or org/name@revision")
    snapshot = hub_snapshot(match["repo"], match["revision"], download=True)
    return ModelReference(name=name or match["repo"], path=snapshot, source=target, revision=snapshot.name)


def is_folder(text: str) -> bool:
    """`text` names an existing folder; a name no folder can have (too long) names none."""
    try:
        return Path(text).is_dir()
    except OSError:
        return False


def split_display_name(reference: str) -> tuple[str | None, str]:
    """`NAME=REFERENCE` -> (NAME, REFERENCE); an existing folder whose name holds `=` is a folder."""
    if "=" not in reference or is_folder(reference):
        return None, reference
    name, target = reference.split("=", 1)
    if not DISPLAY_NAME.fullmatch(name) or not target:
        raise PathEvalError(f"--model {shown(reference)}: a display name is NAME=REFERENCE: give a NAME without '/', "
                            "'=' or spaces, and a folder, zoo:NAME or org/name[@revision] after the '='")
    check_name(name, f"--model {shown(reference)}: the display name",
               "give a NAME of letters, digits, '-' and '_' before the '='")
    return name, target


def resolve_model(reference: str) -> list[ModelReference]:
    """The model(s) one reference names (`zoo` names the whole zoo), resolved offline. The default
    display name is the folder's (a zoo model's), or the hub id without its revision."""
    from path_eval.models.zoo import ZOO_PREFIX, zoo_models

    name, target = split_display_name(reference)
    if not target.strip():  # Path("") is the working folder, which is not what was meant
        raise PathEvalError(f"--model {shown(reference)} names no model: give a checkpoint folder, zoo:NAME or a hub "
                            "id org/name[@revision]")
    if target == "zoo" or target.startswith(ZOO_PREFIX):
        paths = zoo_models(target.removeprefix(ZOO_PREFIX) if target != "zoo" else None)
        if name and len(paths) > 1:
            raise PathEvalError(f"--model {reference}: a display name names one model, and zoo is {len(paths)}: "
                                "give NAME=zoo:MODEL")
        return [ModelReference(name=name or p.name, path=p, source=f"{ZOO_PREFIX}{p.name}") for p in paths]
    if is_folder(target):
        refuse_undecodable_path(target)
        return [ModelReference(name=name or Path(target).name, path=Path(target), source=target)]
    match = HUB_ID.fullmatch(target)
    if match is None:
        raise missing_folder(target)
    try:
        snapshot = hub_snapshot(match["repo"], match["revision"])
    except PathEvalError:
        if local_parent(target) is None:
            raise
        raise missing_folder(target) from None  # a path into a local folder, not a hub id
    return [ModelReference(name=name or match["repo"], path=snapshot, source=target, revision=snapshot.name)]


def refuse_undecodable_path(target: str) -> None:
    """A checkpoint folder whose path is not UTF-8 (a name made on another system): the weights'
    reader refuses such a path, and the run's JSON files cannot hold it."""
    try:
        str(Path(target).absolute()).encode("utf-8")
    except UnicodeEncodeError:
        raise PathEvalError(f"model folder {shown(target)} has a path that is not UTF-8 text: rename the folder (or "
                            "link to it from a UTF-8 name) and give that") from None


def local_parent(target: str) -> Path | None:
    """The deepest folder above `target` that exists, where that is more than the working directory
    (`ckpt` of `ckpt/step-9`): then `target` is a path that was meant, not a hub id."""
    for parent in Path(target).expanduser().parents:
        if parent not in (Path("."), Path(parent.anchor)) and parent.is_dir():
            return parent
    return None


def missing_folder(target: str) -> PathEvalError:
    """One line for a reference that is neither a folder, zoo:NAME nor a hub id in the cache: what
    exists of its path, never a download of a hub model it was not meant to be."""
    path = Path(target).expanduser()
    if path.exists():
        return PathEvalError(f"model {target} is not a directory but a file: give the checkpoint folder that holds "
                             "config.json and the weights")
    parent = local_parent(target)
    where = f"{parent} holds no {path.relative_to(parent)}" if parent else "no such folder"
    return PathEvalError(f"model {target} is not a directory ({where}): give the path of a checkpoint folder with "
                         "config.json and weights, zoo:NAME, or a hub id org/name[@revision]")


def resolve_models(references: list[str]) -> list[ModelReference]:
    """Every reference resolved; default display names that collide become the whole reference
    (the path, or the hub id with its revision); given names must differ."""
    if not references:
        raise PathEvalError("give at least one --model: a checkpoint folder, zoo:NAME (zoo for the whole zoo) or a "
                            "hub id org/name[@revision]")
    given = [(split_display_name(text)[0] is not None, model) for text in references for model in resolve_model(text)]
    chosen = [model.name for named, model in given if named]
    repeated = sorted({n for n in chosen if chosen.count(n) > 1})
    if repeated:
        raise PathEvalError(f"two models are named {repeated[0]!r}: give each its own NAME=")
    defaults = [model.name for named, model in given if not named]
    models = []
    for named, model in given:
        if not named and (defaults.count(model.name) > 1 or model.name in chosen):
            model = model.model_copy(update={"name": str(model.path) if model.revision is None else model.source})
        models.append(model)
    names = [m.name for m in models]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise PathEvalError(f"two models would both be named {twice!r}: give one of them a name with NAME=")
    return models
