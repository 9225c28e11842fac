"""A static scan of submitted modules for code a human should review.

The scan flags, it does not fail: a legitimate solution may use some of these (the reason is
stated per finding). Tampering that happens at run time is caught by the canaries
(``grader._canary``), which do cost the exercise its points.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from grader._source import parse

SUSPICIOUS_MODULES = {
    "ctypes": "native memory and function access",
    "gc": "reaching other objects through the garbage collector",
    "inspect": "reading the caller's frames or source",
    "_pytest": "pytest internals",
    "pytest": "pytest from solution code",
    "subprocess": "starting processes",
    "socket": "network access",
    "urllib": "network access",
    "http": "network access",
    "requests": "network access",
    "importlib": "dynamic imports",
    "builtins": "patching builtins",
    "signal": "signal handlers (timeouts)",
    "threading": "background threads",
    "multiprocessing": "extra processes",
    "pty": "terminal control",
    "marshal": "loading code objects",
}
SUSPICIOUS_CALLS = {
    "os._exit": "exiting the test process", "sys.exit": "exiting the test process",
    "os.kill": "signalling processes", "os.fork": "forking", "os.system": "running a shell",
    "os.popen": "running a shell", "os.exec": "replacing the process",
    "sys._getframe": "reading the caller's frames", "sys.settrace": "tracing the tests",
    "sys.setprofile": "profiling the tests", "exec": "running generated code",
    "eval": "evaluating generated code", "compile": "compiling generated code",
    "__import__": "dynamic imports", "globals": "rewriting module globals",
    "vars": "reading a module's or object's namespace as a dict",
}
SUSPICIOUS_NAMES = {
    "sys.modules": "editing the module table", "__builtins__": "patching builtins",
    "f_back": "walking up the call stack", "f_locals": "reading the tests' locals",
    "f_globals": "reading the tests' globals", "tb_frame": "walking traceback frames",
    "__code__": "rewriting function code", "__subclasses__": "walking the class hierarchy",
    "__closure__": "reading or rewriting a function's closed-over state",
    "__globals__": "reaching a function's module globals",
    "__getattribute__": "bypassing attribute lookup", "__mro__": "walking the class hierarchy",
    "__bases__": "walking the class hierarchy",
    "settrace": "tracing the tests", "setprofile": "profiling the tests",
    "setitimer": "timers that interrupt the tests", "alarm": "timers that interrupt the tests",
    "_disable_current_modes": "switching off the grader's dispatch modes (op counters)",
    "_python_dispatch": "torch's dispatch-mode internals",
    "TorchDispatchMode": "torch's dispatch-mode internals", "TorchFunctionMode": "torch's dispatch-mode internals",
    "__torch_dispatch__": "a tensor type that intercepts every op",
    "__torch_function__": "a tensor type that intercepts every op",
}
# Reaching an attribute by a name computed at run time hides which attribute it is from this scan.
NAME_TAKING_CALLS = ("getattr", "setattr", "delattr", "hasattr", "object.__getattribute__")


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what} ({self.why}): review by hand"


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        # An unnamed base (``model.to(d).eval()``) keeps a placeholder, so the method is never
        # mistaken for the builtin of the same name.
        return f"{_dotted(node.value) or '?'}.{node.attr}"
    return ""


def _computed_name(node: ast.AST) -> bool:
    """Whether an attribute name argument is built by an expression (a concatenation, an f-string, a
    call), not a literal, a variable or another object's attribute."""
    return isinstance(node, (ast.BinOp, ast.JoinedStr, ast.Call))


def _builds_dunder(node: ast.AST) -> bool:
    """A string assembled from pieces (``+``, an f-string, ``str.join``), one of which starts or ends
    with a double underscore: how a dunder name is hidden from a scan for the literal name."""
    joins = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
    if not (isinstance(node, ast.JoinedStr) or joins or (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add))):
        return False
    pieces = [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return any(p.startswith("__") or p.endswith("__") for p in pieces)


def scan_source(source: str, path: str) -> list[Finding]:
    """Findings for one module's source; a syntax error is itself a finding."""
    try:
        tree = parse(source, path)
    except SyntaxError as exc:
        return [Finding(path, exc.lineno or 0, "syntax error", str(exc.msg))]
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if _builds_dunder(node):
            findings.append(Finding(path, node.lineno, "builds a dunder name", "a name assembled at run time"))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top in SUSPICIOUS_MODULES:
                    findings.append(Finding(path, node.lineno, f"imports {name}", SUSPICIOUS_MODULES[top]))
            parts = [part for name in names for part in name.split(".")]
            if isinstance(node, ast.ImportFrom):
                parts += [a.name for a in node.names]
            for part in parts:
                if part in SUSPICIOUS_NAMES:
                    findings.append(Finding(path, node.lineno, f"imports {part}", SUSPICIOUS_NAMES[part]))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in SUSPICIOUS_NAMES:
            findings.append(Finding(path, node.lineno, f"defines {node.name}", SUSPICIOUS_NAMES[node.name]))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            for call, why in SUSPICIOUS_CALLS.items():
                if name == call or (call.endswith(".exec") and name.startswith(call)):
                    findings.append(Finding(path, node.lineno, f"calls {name}()", why))
            if name in NAME_TAKING_CALLS and len(node.args) >= 2:
                attr = node.args[1]
                if isinstance(attr, ast.Constant) and attr.value in SUSPICIOUS_NAMES:
                    findings.append(Finding(path, node.lineno, f"uses {attr.value}", SUSPICIOUS_NAMES[attr.value]))
                elif _computed_name(attr):
                    findings.append(Finding(path, node.lineno, f"calls {name}() with a computed name",
                                            "an attribute name built at run time"))
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = _dotted(node) if isinstance(node, ast.Attribute) else node.id
            for suspicious, why in SUSPICIOUS_NAMES.items():
                if name == suspicious or name.endswith("." + suspicious) or (
                        isinstance(node, ast.Attribute) and node.attr == suspicious):
                    findings.append(Finding(path, node.lineno, f"uses {suspicious}", why))
                    break
    unique = {(f.line, f.what): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.line, f.what))


def read_tree(root: Path) -> dict[str, str]:
    """Every ``*.py`` file under ``root`` (the staged submission): its path relative to ``root``
    -> its text, read now (a submission run after this cannot change what is scanned)."""
    return {str(path.relative_to(root)): path.read_text(encoding="utf-8", errors="replace")
            for path in sorted(root.rglob("*.py"))}


def scan_sources(sources: dict[str, str]) -> list[Finding]:
    """Scan each module of ``sources`` (path -> text, as ``read_tree`` gives)."""
    return [finding for path, text in sources.items() for finding in scan_source(text, path)]
