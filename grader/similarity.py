"""How close a submitted module is to the kit's reference solution, for human review.

Both modules are reduced to a normalized token stream with ``tokenize``: comments, blank lines
and docstrings are dropped, string literals become one placeholder, and every name that is not a
keyword, a builtin or an attribute (``x.sum``: API calls carry meaning) is renamed to a
placeholder numbered by first appearance, so renaming variables or reformatting does not hide a
copy. The similarity is ``difflib.SequenceMatcher(...).ratio()`` of the two streams (0 to 1).

At or above ``NEAR_COPY_THRESHOLD`` (0.9) the module is flagged "near copy of the reference". The
stub's own signatures and docstrings are shared by every submission, so an independent solution
typically lands well below that (the kit's wrong solutions, edited copies of the reference, land
above it). It is a flag for a person to look at, never a score change. Only modules with at least
``MIN_TOKENS`` normalized tokens are flagged: tiny modules look alike whoever writes them.
"""

from __future__ import annotations

import builtins
import difflib
import io
import keyword
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

from grader import catalog

NEAR_COPY_THRESHOLD = 0.9
MIN_TOKENS = 40
MAX_BYTES = 1 << 20
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_KEEP_NAMES = set(keyword.kwlist) | set(keyword.softkwlist) | set(dir(builtins)) | {"self", "cls"}


def normalized_tokens(source: str) -> list[str] | None:
    """The normalized token stream of ``source``; None when it does not tokenize."""
    try:
        raw = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _SKIP]
    except (tokenize.TokenError, SyntaxError):
        return None
    names: dict[str, str] = {}
    out: list[str] = []
    for i, tok in enumerate(raw):
        prev = raw[i - 1] if i else None
        if tok.type == tokenize.STRING:
            # A string alone on its line is a docstring (or a no-op): not code.
            alone = (prev is None or prev.type in (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT)) \
                and (i + 1 == len(raw) or raw[i + 1].type == tokenize.NEWLINE)
            if alone:
                if i + 1 < len(raw):
                    raw[i + 1] = raw[i + 1]._replace(type=tokenize.NL)  # its NEWLINE goes too
                continue
            out.append("<str>")
        elif tok.type == tokenize.NL:
            continue
        elif tok.type == tokenize.NAME and tok.string not in _KEEP_NAMES \
                and not (prev is not None and prev.string == "."):
            out.append(names.setdefault(tok.string, f"<n{len(names)}>"))
        elif tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            out.append(tokenize.tok_name[tok.type])
        else:
            out.append(tok.string)
    return out


def ratio(a: str, b: str) -> float | None:
    """Similarity of two module sources in [0, 1]; None when either does not tokenize."""
    ta, tb = normalized_tokens(a), normalized_tokens(b)
    if ta is None or tb is None:
        return None
    return difflib.SequenceMatcher(None, ta, tb, autojunk=False).ratio()


@dataclass
class Similarity:
    id: str
    ratio: float | None  # None: no reference here, no module, or it does not tokenize
    tokens: int = 0
    note: str = ""

    @property
    def near_copy(self) -> bool:
        return self.ratio is not None and self.ratio >= NEAR_COPY_THRESHOLD and self.tokens >= MIN_TOKENS

    def to_dict(self) -> dict:
        return {**asdict(self), "near_copy": self.near_copy}


def _read(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def compare(submission: Path, exercises: list[catalog.Exercise]) -> list[Similarity]:
    """Similarity of each exercise module of ``submission`` to the kit's reference solution."""
    results = []
    for ex in exercises:
        mine, reference = _read(Path(submission) / ex.relpath), _read(ex.reference)
        if reference is None:
            results.append(Similarity(ex.id, None, note="no reference solution here"))
        elif mine is None:
            results.append(Similarity(ex.id, None, note="no module submitted"))
        else:
            tokens = normalized_tokens(mine)
            value = ratio(mine, reference) if tokens is not None else None
            results.append(Similarity(ex.id, None if value is None else round(value, 3),
                                      len(tokens or []), "" if tokens is not None else "does not tokenize"))
    return results


def near_copy_flags(results: list[Similarity]) -> list[str]:
    """One review flag per near copy, in the wording of the report's other flags."""
    return [f"{r.id}: near copy of the reference solution (similarity {r.ratio:.2f} >= "
            f"{NEAR_COPY_THRESHOLD:.2f}): review by hand" for r in results if r.near_copy]


def flag_near_copies(report) -> list[Similarity]:
    """Compare a scoring ``Report``'s submission folder with the references; add a review flag to
    ``report.flags`` for each near copy. Returns every comparison (empty when the submission is
    not a folder on this machine)."""
    submission = Path(report.submission)
    if not submission.is_dir():
        return []
    known = catalog.load_catalog()
    results = compare(submission, [known[e.id] for e in report.exercises if e.id in known])
    report.flags.extend(near_copy_flags(results))
    return results
