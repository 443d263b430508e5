"""The package's import structure, read from the source with `ast` (every import, also those inside
functions, and `from path_eval import NAME`), against what docs/architecture.md states.

A node is a folder of the package or one of its top-level modules (`path_eval/kernels` is the
repository's `kernels/`); `path_eval` itself is the node of the package's own names
(`path_eval/__init__.py`: `load_model`, the Python API). An edge A -> B: a module of A imports from B.

(a) The folder graph has no cycle.
(b) LAYERS, from the ground floor up: a node imports only from its own layer or a lower one.
(c) docs/architecture.md's Layers table lists LAYERS.
(d) Following the plan from the run loop, at most 2 returns to a higher layer: walk `run` in
    `path_eval/runner/run.py` in source order (the calls of the module's own helpers in the place
    where `run` calls them), keep each call into a pipeline stage (a name imported from it, or a
    method of an object the module made by calling one, as the evaluators evaluator_of gives), map it to
    the stage's index (suites < plan < evaluators < samples < metrics < results < reports; a call
    into any other package, such as models or lm, is no stage), and count the returns: the times
    the index goes down from the call before.
(e) The run folder has one owner: no module but `path_eval/run_folder.py` spells a path in it (a
    `/` with one of the names docs/architecture.md's run folder table gives, a per-sample log's or a
    block's file name, or one of those names bound to a constant).
"""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "path_eval"
# The package's folders outside path_eval/ (pyproject.toml's package-dir) that hold code.
MAPPED_FOLDERS = {"kernels": ROOT / "kernels"}

# From the ground floor up (docs/architecture.md, "Layers").
LAYERS = [
    {"errors", "locations", "package_data", "version", "atomic_files", "source_folders", "terminal", "zoo", "cpu_threads", "sandbox"},
    {"kernels"},
    {"data"},
    {"models"},
    {"metrics"},
    {"samples", "run_folder"},
    {"tasks"},
    {"kinds"},
    {"suites"},
    {"lm"},
    {"plan"},
    {"evaluators"},
    {"results"},
    {"reports"},
    {"runner"},
    {"api"},
    {"path_eval", "cli"},
]

STAGES = ["suites", "plan", "evaluators", "samples", "metrics", "results", "reports"]
MAX_RETURNS = 2


def package_files() -> dict[str, Path]:
    """Every module of the package by its dotted name."""
    modules = {}
    for prefix, folder in [("path_eval", PACKAGE), *((f"path_eval.{n}", f) for n, f in MAPPED_FOLDERS.items())]:
        for file in sorted(folder.rglob("*.py")):
            parts = file.relative_to(folder).with_suffix("").parts
            modules[".".join((prefix, *parts)).removesuffix(".__init__")] = file
    return modules


def node_of(name: str, modules: dict[str, Path]) -> str:
    """The node of a dotted name inside the package: its folder or top-level module, or `path_eval`
    for a name of the package's own `__init__.py`."""
    top_level = {module.split(".")[1] for module in modules if module != "path_eval"}
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in top_level else "path_eval"


def imported_modules(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, int]]:
    """(dotted name, line) of everything the module imports, each `from X import a, b` as X.a and X.b,
    inside functions too. Imports under `if TYPE_CHECKING:` are left out: annotations only, they never
    run, so they tie no module to another."""
    found = []
    type_only = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node.test)
                 for stmt in node.body for inner in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + is_package]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            found += [(f"{source}.{alias.name}", node.lineno) for alias in node.names]
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph() -> dict[tuple[str, str], list[str]]:
    """{(node, node it imports from): ["file:line", ...]} over every module of the package."""
    modules = package_files()
    edges = defaultdict(list)
    for module, file in modules.items():
        source = node_of(module, modules)
        tree = ast.parse(file.read_text(), str(file))
        for name, line in imported_modules(tree, module, file.name == "__init__.py"):
            if name != "path_eval" and not name.startswith("path_eval."):
                continue
            target = node_of(name, modules)
            where = f"{file.relative_to(ROOT)}:{line}"
            if target != source and where not in edges[(source, target)]:
                edges[(source, target)].append(where)
    return dict(edges)


def find_cycle(edges) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    graph = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
    state, path = {}, []

    def visit(node):
        state[node], path[len(path):] = "open", [node]
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def layer_violations(edges, layers) -> list[str]:
    """Each edge into a higher layer, and each node no layer names."""
    floor = {node: level for level, nodes in enumerate(layers) for node in nodes}
    nodes = {node for edge in edges for node in edge}
    problems = [f"{node} is in no layer: add it to LAYERS and docs/architecture.md" for node in sorted(nodes - set(floor))]
    problems += [f"{source} (layer {floor[source]}) imports {target} (layer {floor[target]}) at {', '.join(where)}"
                 for (source, target), where in sorted(edges.items())
                 if source in floor and target in floor and floor[target] > floor[source]]
    return problems


def stage_calls(source: str, function: str = "run") -> list[tuple[int, str, str]]:
    """(line, callee, stage) of each call into a pipeline stage in `function`, in source order; a
    call of a helper the module defines contributes that helper's calls in its place. A call is into
    the stage that defines what it calls: a name imported from it, or a method of an object the
    module made by such a call (also taken out of a dict, list or comprehension of them, as the
    evaluators out of a list of them). Names are tracked by binding (assignment, `for` and comprehension
    targets), one namespace for the whole module."""
    tree = ast.parse(source)
    objects, containers = {}, {}  # local name -> dotted name of what made it (or its elements)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            objects.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            objects.update({a.asname or a.name.split(".")[0]: a.name for a in node.names})
    imported = dict(objects)
    helpers = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}

    def callee(func) -> str | None:
        """The dotted name a call reaches: an imported name, an attribute of one, or a method of an
        object made by calling one."""
        chain = []
        while isinstance(func, ast.Attribute):
            chain.insert(0, func.attr)
            func = func.value
        if isinstance(func, ast.Name) and func.id in imported:
            return ".".join([imported[func.id], *chain])
        if isinstance(func, ast.Name) and func.id in objects and chain:
            return ".".join([objects[func.id], *chain])
        return None

    def made_by(value) -> tuple[str | None, str | None]:
        """(what made the value, what made its elements: the first one's maker)."""
        if isinstance(value, ast.Call):
            if isinstance(value.func, ast.Attribute) and isinstance(value.func.value, ast.Name) \
                    and value.func.value.id in containers:
                return None, containers[value.func.value.id]  # .items(), .values() of a container
            return callee(value.func), None
        if isinstance(value, ast.Name):
            return objects.get(value.id), containers.get(value.id)
        if isinstance(value, ast.BinOp):
            return made_by(value.left)
        if isinstance(value, (ast.Tuple, ast.List)) and value.elts:
            return made_by(value.elts[0])[0], None
        if isinstance(value, ast.Dict) and value.values:
            return None, made_by(value.values[0])[0]
        if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
            for generator in value.generators:
                bind(generator.target, generator.iter, iterated=True)
            return None, made_by(value.elt)[0]
        return None, None

    def bind(target, value, iterated=False):
        maker, elements = made_by(value)
        maker, elements = (elements, None) if iterated else (maker, elements)
        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
            objects.pop(name, None), containers.pop(name, None)
            if maker:
                objects[name] = maker
            if elements:
                containers[name] = elements

    def position(node):
        node = node.target if isinstance(node, ast.comprehension) else node
        return node.lineno, node.col_offset

    bindings = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.comprehension)
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, bindings)), key=position):  # in source order
        if isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target, node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            bind(node.target, node.value)
        elif isinstance(node, (ast.For, ast.comprehension)):
            bind(node.target, node.iter, iterated=True)

    def walk(name, seen):
        calls = sorted((n for n in ast.walk(helpers[name]) if isinstance(n, ast.Call)),
                       key=lambda n: (n.lineno, n.col_offset))
        found = []
        for call in calls:
            if isinstance(call.func, ast.Name) and call.func.id in helpers and call.func.id not in seen:
                found += walk(call.func.id, seen | {call.func.id})
            elif (target := callee(call.func)) and target.startswith("path_eval."):
                stage = target.split(".")[1]
                if stage in STAGES:
                    found.append((call.lineno, target, stage))
        return found

    return walk(function, {function})


def returns(stages: list[str]) -> int:
    """The times the stage index goes down from the call before."""
    indices = [STAGES.index(stage) for stage in stages]
    return sum(later < earlier for earlier, later in zip(indices, indices[1:]))


def test_the_folder_graph_has_no_cycle():
    edges = import_graph()
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle " + " -> ".join(cycle) + ": " + "; ".join(
        f"{a} -> {b} at {', '.join(edges[(a, b)])}" for a, b in zip(cycle, cycle[1:]))


def test_each_folder_imports_only_from_its_own_or_lower_layers():
    assert layer_violations(import_graph(), LAYERS) == []


def test_every_layer_is_stated_in_the_architecture_page():
    page = (ROOT / "docs" / "architecture.md").read_text()
    rows = [line.split("|") for line in page.splitlines() if line.startswith("| ")]
    stated = [set(row[2].replace("`", "").replace(" ", "").split(",")) for row in rows if row[1].strip().isdigit()]
    assert stated == LAYERS, f"docs/architecture.md's Layers table names {stated}, the test's LAYERS {LAYERS}"


def test_following_the_plan_from_the_run_loop_returns_at_most_twice():
    calls = stage_calls((PACKAGE / "runner" / "run.py").read_text())
    assert calls, "no call into a pipeline stage found in the run loop"
    assert returns([stage for _, _, stage in calls]) <= MAX_RETURNS, calls


def test_the_checks_find_what_they_look_for():
    """Each check fails where it should: a cycle, an import into a higher layer, a third return."""
    assert find_cycle({("a", "b"): [], ("b", "c"): [], ("c", "a"): []}) == ["a", "b", "c", "a"]
    assert find_cycle({("a", "b"): [], ("b", "c"): []}) is None
    assert layer_violations({("low", "high"): ["x.py:1"]}, [{"low"}, {"high"}]) == [
        "low (layer 0) imports high (layer 1) at x.py:1"]
    assert returns(["results", "plan", "results", "evaluators", "reports", "suites"]) == 3
    source = ("from path_eval.plan import Planner\nfrom path_eval import results\nfrom path_eval.models import m\n"
              "ALL = {'one': Planner()}\n"
              "def helper():\n    results.b()\n"
              "def run():\n    helper()\n    m()\n    for planner in ALL.values():\n        planner.a()\n"
              "    results.store.c()\n")
    assert stage_calls(source) == [(6, "path_eval.results.b", "results"), (11, "path_eval.plan.Planner.a", "plan"),
                                   (12, "path_eval.results.store.c", "results")]


# The run folder's entries (docs/architecture.md, "The run folder"), as its owner alone may spell them.
RUN_FOLDER_OWNER = PACKAGE / "run_folder.py"
RUN_FOLDER_NAMES = {"plan.json", "suite.json", "results.json", "timings.json", "run.lock", "samples", "curves",
                    "resume", "lm_eval", "wandb", "runs"}
RUN_FOLDER_PREFIXES = ("perplexity_by_position", "rescored-", "block-")
# Stages that write or read a run folder: there, a `/` onto a .jsonl, .npy or .db name is a log, a
# curve or a resume cache (elsewhere, as in `data` and `tasks`, it names data files and caches).
RUN_FOLDER_STAGES = {"evaluators", "results", "reports", "runner", "samples", "lm", "api", "cli", "path_eval"}
RUN_FOLDER_SUFFIXES = (".jsonl", ".npy", ".db")


def _literal_text(node) -> str | None:
    """A string constant's text, an f-string's literal parts joined around `{}`; None for the rest."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
    return None


def _names_the_run_folder(text: str) -> bool:
    return text in RUN_FOLDER_NAMES or text.startswith(RUN_FOLDER_PREFIXES)


def run_folder_expressions(source: str, in_run_stage: bool) -> list[int]:
    """The lines of `source` that spell a run-folder path: a `/` onto one of its names (or a log's,
    a curve's, a resume cache's file name in a stage that reads or writes a run folder), or one of
    its file names bound to a name (`LAYOUT = "results.json"`)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            text = _literal_text(node.right)
            if text is not None and (_names_the_run_folder(text)
                                     or (in_run_stage and text.endswith(RUN_FOLDER_SUFFIXES))):
                lines.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            text = _literal_text(node.value)
            if text is not None and _names_the_run_folder(text):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_only_the_run_folder_module_spells_run_folder_paths():
    modules = package_files()
    found = [f"{file.relative_to(ROOT)}:{line}" for module, file in modules.items() if file != RUN_FOLDER_OWNER
             for line in run_folder_expressions(file.read_text(), node_of(module, modules) in RUN_FOLDER_STAGES)]
    assert found == [], f"run-folder paths spelled outside path_eval/run_folder.py (ask it instead): {found}"


def test_the_run_folder_count_finds_what_it_looks_for():
    """Each form of a run-folder path is counted, and paths of no run folder are not."""
    source = ('a = out / "plan.json"\n'
              'b = Path(run) / "samples" / slug(model) / f"{name}.jsonl"\n'
              'print(f"results: {out / \'results.json\'}")\n'
              'LAYOUT = "lm_eval"\n'
              'c = folder / f"block-{i:05d}.npy"\n'
              'd = out / "perplexity_by_position.csv"\n'
              'e = {"samples": 1}["samples"]\n'
              'f = cache / "tokenizers" / "x"\n')
    assert run_folder_expressions(source, in_run_stage=True) == [1, 2, 3, 4, 5, 6]
    assert run_folder_expressions('g = data_dir / f"{split}.jsonl"\n', in_run_stage=False) == []
    assert run_folder_expressions('g = data_dir / f"{split}.jsonl"\n', in_run_stage=True) == [1]
