"""The Python package keeps its layers: every import goes one way, with no circle.

Every ``import`` in ``python/aqmlab`` is read with :mod:`ast`, function-level ones included (only
those under ``if TYPE_CHECKING:`` are skipped: they never run). The layers, lowest first:

    base → run → sweep → models → analysis → {reproduce, plot, emulate, bench} → cli

A module may import its own layer and lower ones; the four in braces are siblings that never
import each other; ``aqmlab._core`` (the engine) may be imported from anywhere. Besides:

* a module that loads a file as a module (``importlib.util.spec_from_file_location``, as a figure
  kind runs an experiment's ``hook.py``) imports what that file imports: every file of the package's
  data folders with the name the module gives (``"hook.py"``) counts, so a hook's import of a
  higher layer is the loading module's violation;
* nothing inside the package imports the package root (``aqmlab/__init__.py``: ``import aqmlab``,
  ``from .. import __version__``); the root only re-exports;
* there is no import circle between modules (package ``__init__`` modules included);
* no ``_private`` name (nor module) is imported from another module (``_core`` aside);
* every exception class is defined in ``aqmlab/base/errors.py``;
* no source file is longer than 900 lines;
* ``aqmlab/_core.pyi`` describes exactly what the native module exports.

``experiments/`` is data (experiment folders, some with a ``hook.py``), not part of the package's
code, and is not read. The checks run on any package folder (:func:`violations`), and the tests
at the end show that each fails on a package that breaks it.
"""

from __future__ import annotations

import ast
import builtins
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "aqmlab"

#: the layers, lowest first; the layers of one tuple are siblings that must not import each other
LAYERS = [("base",), ("run",), ("ns2",), ("sweep",), ("models",), ("analysis",), ("reproduce", "plot", "emulate", "bench", "ns3"),
          ("cli",)]
#: the engine: importable from every layer, imports nothing of ours
NATIVE = "_core"
#: folders inside the package that hold data, not code
DATA = ("experiments",)
MAX_LINES = 900


def _rank(layers) -> dict:
    return {name: i for i, group in enumerate(layers) for name in group}


def modules(pkg: Path) -> dict[str, Path]:
    """Every module of the package (dotted name -> file), ``__init__`` files named by their package."""
    out = {}
    for f in sorted(pkg.rglob("*.py")):
        rel = f.relative_to(pkg.parent).with_suffix("")
        if any(part in DATA for part in rel.parts[1:]):
            continue
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = f
    return out


def _type_checking(node) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _nodes(tree):
    """Every node, except those under ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def imports(name: str, path: Path, known: dict) -> list[tuple[str, list[str], int]]:
    """``(target module, imported names, line)`` of every import of the package's own modules."""
    top = name.split(".")[0]
    is_pkg = path.name == "__init__.py"
    out = []
    for node in _nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == top or a.name.startswith(top + "."):
                    out.append((a.name, [], node.lineno))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_pkg else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target != top and not target.startswith(top + "."):
                continue
            names = [a.name for a in node.names]
            modules_named = [n for n in names if f"{target}.{n}" in known or n == NATIVE]
            for n in modules_named:  # `from pkg import module`: an import of that module
                out.append((f"{target}.{n}", [], node.lineno))
            rest = [n for n in names if n not in modules_named]
            if rest or not modules_named:
                out.append((target, rest, node.lineno))
    return out


def file_loads(name: str, path: Path, pkg: Path, known: dict) -> list[tuple[str, list[str], int]]:
    """The imports of the files a module loads as modules: where it calls
    ``importlib.util.spec_from_file_location``, the imports of every file under the package's data
    folders named by a ``"*.py"`` string of that module, at the line of the call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [n.lineno for n in _nodes(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", getattr(n.func, "id", None)) == "spec_from_file_location"]
    if not calls:
        return []
    names = {n.value for n in _nodes(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
             and n.value.endswith(".py")}
    out = []
    for folder in DATA:
        for name_ in sorted(names):
            for f in sorted((pkg / folder).rglob(name_)):
                # the loaded file is not a module of the package: read its absolute imports
                for target, imported, _ in imports(f"{pkg.name}.{folder}.x", f, known):
                    out.append((target, imported, calls[0]))
    return out


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__")) and name != NATIVE


def _cycles(graph: dict) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def violations(pkg: Path = PACKAGE, layers=LAYERS) -> list[str]:
    """Everything that breaks the rules of the module notes, one line each."""
    rank = _rank(layers)
    known = modules(pkg)
    top = pkg.name
    bad = []
    graph: dict = {m: set() for m in known}
    for mod, path in known.items():
        parts = mod.split(".")
        rel = path.relative_to(pkg.parent)
        if len(parts) > 1 and parts[1] not in rank:
            bad.append(f"{rel}: not in a layer ({parts[1]!r} is none of {', '.join(rank)})")
            continue
        for target, names, line in imports(mod, path, known) + file_loads(mod, path, pkg, known):
            where = f"{rel}:{line}"
            tparts = target.split(".")
            if target == top:
                if mod != top:
                    bad.append(f"{where}: imports the package root ({', '.join(names) or top})")
                continue
            if tparts[1] == NATIVE:
                continue
            for n in names:
                if _private(n):
                    bad.append(f"{where}: imports the private name {n} from {target}")
            if any(_private(p) for p in tparts[1:]):
                bad.append(f"{where}: imports the private module {target}")
            if target not in known:
                bad.append(f"{where}: imports {target}, which is not a module of the package")
                continue
            graph[mod].add(target)
            if mod == top:
                continue  # the root re-exports from any layer
            mine, theirs = parts[1], tparts[1]
            if theirs not in rank:
                continue  # reported above for that module
            if rank[theirs] > rank[mine]:
                bad.append(f"{where}: {mine} imports {target}, a higher layer ({theirs})")
            elif rank[theirs] == rank[mine] and theirs != mine:
                bad.append(f"{where}: {mine} imports {target}, a sibling layer ({theirs})")
    for comp in _cycles(graph):
        bad.append(f"import circle: {' <-> '.join(comp)}")
    return bad


def exception_classes(pkg: Path = PACKAGE) -> list[str]:
    """Exception classes defined anywhere but in ``base/errors.py``: classes deriving from a built-in
    exception or from a name that ``base/errors.py`` defines or imports."""
    errors = pkg / "base" / "errors.py"
    ours = set()
    for node in ast.walk(ast.parse(errors.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ClassDef):
            ours.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            ours.update(a.asname or a.name for a in node.names)
    builtin = {n for n in dir(builtins) if isinstance(getattr(builtins, n), type)
               and issubclass(getattr(builtins, n), BaseException)}
    out = []
    for mod, path in modules(pkg).items():
        if path == errors:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                if bases & (builtin | ours):
                    out.append(f"{path.relative_to(pkg.parent)}:{node.lineno}: class {node.name}")
    return out


# ----------------------------------------------------------------------------- the package


def test_imports_keep_the_layers_and_make_no_circle():
    bad = violations()
    assert not bad, "\n".join(bad)


def test_every_layer_is_a_subpackage_and_the_root_only_re_exports():
    for group in LAYERS:
        for name in group:
            assert (PACKAGE / name / "__init__.py").is_file(), f"layer {name} is not a subpackage"
    stray = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert not stray, f"modules outside every layer: {stray}"
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    code = [n for n in tree.body if not isinstance(n, (ast.ImportFrom, ast.Assign))
            and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    assert not code, "aqmlab/__init__.py should only import and list names"


def test_the_root_docstring_lists_every_module():
    import aqmlab

    doc = aqmlab.__doc__
    missing = [m for m in modules(PACKAGE) if m != "aqmlab" and m.split(".")[-1] != "__main__"
               and f"``{m.split('.', 1)[1]}``" not in doc]
    assert not missing, f"not in aqmlab's docstring: {missing}"


def test_import_aqmlab_and_the_command_parser_load_nothing_heavy():
    """``import aqmlab`` (and building the ``aqmlab`` command's parser) loads none of pandas, pyarrow,
    matplotlib or scipy: they load where a DataFrame, a Parquet file, a figure or a model is needed."""
    import subprocess
    import sys

    code = ("import sys, aqmlab, aqmlab.cli; aqmlab.cli.build_parser(); "
            "print(' '.join(m for m in ('pandas', 'pyarrow', 'matplotlib', 'scipy') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"import aqmlab loaded: {r.stdout.strip()}"


def test_every_exception_class_is_in_base_errors():
    bad = exception_classes()
    assert not bad, "define exception classes in aqmlab/base/errors.py:\n" + "\n".join(bad)


def test_no_source_file_is_over_900_lines():
    long = {str(p.relative_to(ROOT)): n for p in modules(PACKAGE).values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_the_stub_describes_the_native_module():
    from aqmlab import _core

    tree = ast.parse((PACKAGE / "_core.pyi").read_text(encoding="utf-8"))
    stubbed = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not _private(node.name):  # (_name: a helper type)
            stubbed.add(node.name)
            if isinstance(node, ast.FunctionDef) or node.name in ("ScenarioError", "SimulationError"):
                continue
            members = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
            real = {n for n in vars(getattr(_core, node.name)) if not n.startswith("_")} | {"__new__"}
            assert members == real, f"{node.name}: stub {sorted(members)}, module {sorted(real)}"
        elif isinstance(node, ast.AnnAssign):
            stubbed.add(node.target.id)
    exported = {n for n in dir(_core) if not n.startswith("__") or n == "__version__"}
    assert stubbed == exported, f"only in the stub: {sorted(stubbed - exported)}; " \
                                f"only in the module: {sorted(exported - stubbed)}"


# ----------------------------------------------------------------------------- the checks can fail


def _package(tmp_path, files: dict) -> Path:
    pkg = tmp_path / "aqmlab"
    for rel, text in files.items():
        f = pkg / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text))
    for d in [pkg, *[p for p in pkg.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch(exist_ok=True)
    return pkg


GOOD = {"base/errors.py": "class Oops(ValueError):\n    pass\n",
        "run/api.py": "from ..base.errors import Oops\nfrom .. import _core\n",
        "cli/main.py": "def main():\n    from ..run.api import Oops\n",
        "experiments/x/hook.py": "import aqmlab\nfrom aqmlab.cli.main import main\n"}


@pytest.mark.parametrize("files, expect", [
    ({"base/units.py": "def f():\n    from ..run.api import Oops\n"}, "a higher layer"),
    ({"reproduce/a.py": "from ..emulate.b import x\n", "emulate/b.py": "x = 1\n"}, "a sibling layer"),
    ({"run/more.py": "from .. import __version__\n"}, "imports the package root"),
    ({"run/other.py": "def f():\n    import aqmlab\n"}, "imports the package root"),
    ({"run/priv.py": "from .api import _helper\n"}, "private name _helper"),
    ({"run/mod.py": "from . import _hidden\n", "run/_hidden.py": "x = 1\n"}, "private module"),
    ({"stray.py": "x = 1\n"}, "not in a layer"),
    ({"run/loop_a.py": "from .loop_b import y\n", "run/loop_b.py": "def y():\n    from .loop_a import x\n"},
     "import circle: aqmlab.run.loop_a <-> aqmlab.run.loop_b"),
    ({"sweep/__init__.py": "from .spec import Sweep\n", "sweep/spec.py": "from . import Sweep as S\n"},
     "import circle: aqmlab.sweep <-> aqmlab.sweep.spec"),
    ({"analysis/figs.py": "import importlib.util\n\ndef hook(d):\n"
                          "    return importlib.util.spec_from_file_location('h', d / 'hook.py')\n",
      "experiments/e1/hook.py": "from aqmlab.cli.main import main\n", "cli/main.py": "def main():\n    pass\n"},
     "a higher layer"),
])
def test_the_checks_fail_on_a_package_that_breaks_them(tmp_path, files, expect):
    bad = violations(_package(tmp_path, {**GOOD, **files}))
    assert any(expect in b for b in bad), bad


def test_the_checks_pass_a_well_layered_package_and_skip_type_checking(tmp_path):
    files = dict(GOOD)
    files["analysis/ctx.py"] = ("from typing import TYPE_CHECKING\n"
                                "if TYPE_CHECKING:\n    from ..reproduce.exp import Experiment\n")
    files["reproduce/exp.py"] = "from ..analysis.ctx import x\n"
    assert violations(_package(tmp_path, files)) == []


def test_an_exception_class_outside_base_errors_is_found(tmp_path):
    files = dict(GOOD)
    files["run/api.py"] = "from ..base.errors import Oops\n\nclass Worse(Oops):\n    pass\n\nclass Fine:\n    pass\n"
    files["sweep/x.py"] = "class Stop(KeyboardInterrupt):\n    pass\n"
    found = sorted(f.split(": ")[1] for f in exception_classes(_package(tmp_path, files)))
    assert found == ["class Stop", "class Worse"]
