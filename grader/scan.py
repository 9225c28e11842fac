"""A static scan of submitted modules for code a human should review.

The scan flags, it does not fail: a legitimate solution may use some of these (the reason is
stated per finding). Tampering that happens at run time is caught by the canaries
(``grader._canary``), which do cost the exercise its points.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

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
}
SUSPICIOUS_NAMES = {
    "sys.modules": "editing the module table", "__builtins__": "patching builtins",
    "f_back": "walking up the call stack", "f_locals": "reading the tests' locals",
    "f_globals": "reading the tests' globals", "tb_frame": "walking traceback frames",
    "__code__": "rewriting function code", "__subclasses__": "walking the class hierarchy",
}


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
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def scan_source(source: str, path: str) -> list[Finding]:
    """Findings for one module's source; a syntax error is itself a finding."""
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        return [Finding(path, exc.lineno or 0, "syntax error", str(exc.msg))]
    findings: list[Finding] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top in SUSPICIOUS_MODULES:
                    findings.append(Finding(path, node.lineno, f"imports {name}", SUSPICIOUS_MODULES[top]))
        elif isinstance(node, ast.Call):
            name = _dotted(node.func)
            for call, why in SUSPICIOUS_CALLS.items():
                if name == call or (call.endswith(".exec") and name.startswith(call)):
                    findings.append(Finding(path, node.lineno, f"calls {name}()", why))
        elif isinstance(node, (ast.Attribute, ast.Name)):
            name = _dotted(node) if isinstance(node, ast.Attribute) else node.id
            for suspicious, why in SUSPICIOUS_NAMES.items():
                if name == suspicious or name.endswith("." + suspicious) or (
                        isinstance(node, ast.Attribute) and node.attr == suspicious):
                    findings.append(Finding(path, node.lineno, f"uses {suspicious}", why))
                    break
    unique = {(f.line, f.what): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.line, f.what))


def scan_tree(root: Path) -> list[Finding]:
    """Scan every ``*.py`` file under ``root`` (the staged submission)."""
    findings: list[Finding] = []
    for path in sorted(root.rglob("*.py")):
        findings.extend(scan_source(path.read_text(encoding="utf-8", errors="replace"),
                                    str(path.relative_to(root))))
    return findings
