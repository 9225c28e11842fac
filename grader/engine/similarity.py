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

Submissions are also compared with each other (``near_copy_pairs``), the way MOSS does it:
winnowing (Schleimer, Wilkerson and Aiken, SIGMOD 2003) over a coarser token stream
(``fingerprint_tokens``: every identifier one symbol, every literal another, comments, docstrings
and layout dropped). Each module's fingerprints are the minimum hashes of every window of
``WINDOW`` consecutive ``KGRAM``-token hashes; the fingerprints of the exercise's stub are removed
(code every candidate got from the stub proves nothing); two modules are a near-copy pair when
the fingerprints they share are at least ``PAIR_THRESHOLD`` (default 0.8) of the smaller one's
(containment). Modules with fewer than ``MIN_FINGERPRINTS`` fingerprints of their own are never
paired. Winnowing guarantees that any match of ``KGRAM + WINDOW - 1`` tokens or more shares a
fingerprint; the threshold is a flag for a person to look at, never a score change.
"""

from __future__ import annotations

import builtins
import difflib
import functools
import hashlib
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


def _code_tokens(source: str) -> list[tokenize.TokenInfo] | None:
    """The tokens of ``source`` that are code: no comment, blank line or docstring (a string alone
    on its line, with its NEWLINE). None when it does not tokenize."""
    try:
        raw = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type not in _SKIP]
    except (tokenize.TokenError, SyntaxError):
        return None
    out: list[tokenize.TokenInfo] = []
    skip_newline = False
    for i, tok in enumerate(raw):
        if skip_newline and tok.type == tokenize.NEWLINE:
            skip_newline = False
            continue
        if tok.type == tokenize.STRING:
            prev = raw[i - 1] if i else None
            alone = (prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)) \
                and (i + 1 == len(raw) or raw[i + 1].type == tokenize.NEWLINE)
            if alone:
                skip_newline = True
                continue
        out.append(tok)
    return out


def normalized_tokens(source: str) -> list[str] | None:
    """The normalized token stream of ``source``; None when it does not tokenize."""
    tokens = _code_tokens(source)
    if tokens is None:
        return None
    names: dict[str, str] = {}
    out: list[str] = []
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.STRING:
            out.append("<str>")
        elif tok.type == tokenize.NAME and tok.string not in _KEEP_NAMES \
                and not (i and tokens[i - 1].string == "."):
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


@functools.lru_cache(maxsize=128)
def _reference_tokens(reference: str) -> tuple[str, ...] | None:
    """``normalized_tokens`` of a reference solution, made once: a batch compares every submission
    with the same references."""
    tokens = normalized_tokens(reference)
    return None if tokens is None else tuple(tokens)


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

    @classmethod
    def from_dict(cls, data: dict) -> Similarity:
        return cls(data["id"], data.get("ratio"), data.get("tokens", 0), data.get("note", ""))


def _read(path: Path) -> str | None:
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def to_reference(ex: catalog.Exercise, code: str | None) -> Similarity:
    """Similarity of ``code``, the module submitted for ``ex`` (None: none), to its reference."""
    reference = _read(ex.reference)
    if reference is None:
        return Similarity(ex.id, None, note="no reference solution here")
    if code is None:
        return Similarity(ex.id, None, note="no module submitted")
    tokens = normalized_tokens(code)
    if tokens is None:
        return Similarity(ex.id, None, note="does not tokenize")
    reference_tokens = _reference_tokens(reference)
    if reference_tokens is None:
        return Similarity(ex.id, None, note="the reference solution does not tokenize")
    # A matcher of its own: a batch's jobs compare with the same reference at once.
    matcher = difflib.SequenceMatcher(None, tokens, reference_tokens, autojunk=False)
    return Similarity(ex.id, round(matcher.ratio(), 3), len(tokens))


def near_copy_flags(results: list[Similarity]) -> list[str]:
    """One review flag per near copy, in the wording of the report's other flags."""
    return [f"{r.id}: near copy of the reference solution (similarity {r.ratio:.2f} >= "
            f"{NEAR_COPY_THRESHOLD:.2f}): review by hand" for r in results if r.near_copy]


def to_references(code: dict[str, str | None]) -> dict[str, Similarity]:
    """``to_reference`` of each exercise's module in ``code`` (exercise id -> its source, None:
    none), for the exercises this kit knows."""
    known = catalog.load_catalog()
    return {ex_id: to_reference(known[ex_id], text) for ex_id, text in code.items() if ex_id in known}


def flag_near_copies(report, compared: dict[str, Similarity] | None = None) -> list[Similarity]:
    """Compare the code of each exercise of a scoring ``Report`` (``ExerciseResult.code``, kept
    when it was graded) with the reference; keep each comparison in the exercise's ``similarity``
    and add a review flag to ``report.flags`` for each near copy. ``compared``: those
    comparisons, already made (``to_references`` of the same code). Returns the comparisons (none
    for exercises this kit does not know)."""
    if compared is None:
        compared = to_references({ex.id: ex.code for ex in report.exercises})
    results = []
    for ex in report.exercises:
        if ex.id in compared:
            ex.similarity = compared[ex.id].to_dict()
            results.append(compared[ex.id])
    report.flags.extend(near_copy_flags(results))
    return results


# --- Submissions compared with each other: winnowing (MOSS) ---------------------------------

KGRAM = 12  # tokens per hashed k-gram: shorter common runs are noise (a signature, a loop header)
WINDOW = 6  # k-grams per winnowing window: every common run of KGRAM + WINDOW - 1 tokens is seen
PAIR_THRESHOLD = 0.8
MIN_FINGERPRINTS = 8
# Python 3.12 and later tokenize an f-string's text apart (FSTRING_MIDDLE; 3.14: t-strings too).
_LITERALS = {tokenize.NUMBER, tokenize.STRING,
             *(getattr(tokenize, kind) for kind in ("FSTRING_MIDDLE", "TSTRING_MIDDLE") if hasattr(tokenize, kind))}


def fingerprint_tokens(source: str) -> list[str] | None:
    """The token stream winnowing hashes: keywords, operators and the logical-line structure as
    written; every identifier is ``I`` and every literal ``L``; comments, docstrings and layout
    are dropped. None when ``source`` does not tokenize."""
    tokens = _code_tokens(source)
    if tokens is None:
        return None
    out = []
    for tok in tokens:
        if tok.type in _LITERALS:
            out.append("L")
        elif tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            out.append("I")
        elif tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
            out.append(tokenize.tok_name[tok.type])
        else:
            out.append(tok.string)
    return out


def fingerprints(source: str, kgram: int = KGRAM, window: int = WINDOW) -> set[int]:
    """The winnowed fingerprints of ``source``: of each window of ``window`` consecutive k-gram
    hashes, the minimum. Empty when ``source`` does
    not tokenize or is shorter than one k-gram. (Which of equal minima is chosen does not matter
    here: a fingerprint is its hash, compared as a set.)"""
    tokens = fingerprint_tokens(source)
    if tokens is None or len(tokens) < kgram:
        return set()
    hashes = [int.from_bytes(hashlib.blake2b(" ".join(tokens[i:i + kgram]).encode(), digest_size=8).digest(),
                             "big") for i in range(len(tokens) - kgram + 1)]
    return {min(hashes[start:start + window]) for start in range(max(1, len(hashes) - window + 1))}


def containment(a: set[int], b: set[int]) -> float:
    """The share of the smaller fingerprint set found in the other (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


@dataclass(frozen=True)
class Pair:
    """Two submissions whose code for one exercise is a near copy of each other's."""

    exercise: str
    first: str
    second: str
    similarity: float  # containment of their fingerprints (stub's removed), 0 to 1
    shared: int  # fingerprints they share


def near_copy_pairs(code: dict[str, dict[str, str | None]], threshold: float = PAIR_THRESHOLD,
                    stubs: dict[str, str] | None = None) -> list[Pair]:
    """Every pair of submissions whose module for one exercise is a near copy of the other's.

    ``code``: submission name -> exercise id -> its module's source (None or missing: none).
    ``stubs``: exercise id -> the stub's source, whose fingerprints never count (default: the
    catalog's stubs). A pair is flagged when ``containment`` of their fingerprints reaches
    ``threshold`` and both have at least ``MIN_FINGERPRINTS`` of their own. Sorted by exercise,
    then similarity (highest first), then names.

    Raises:
        ValueError: ``threshold`` is not a number in (0, 1].
    """
    check_threshold(threshold)
    if stubs is None:
        known = catalog.load_catalog()
        stubs = {i: _read(known[i].stub) or "" for sub in code.values() for i in sub if i in known}
    exercise_ids = sorted({i for sub in code.values() for i, text in sub.items() if text is not None})
    pairs = []
    for ex_id in exercise_ids:
        common = fingerprints(stubs.get(ex_id) or "")
        prints = {}
        for name in sorted(code):
            text = code[name].get(ex_id)
            own = fingerprints(text) - common if text is not None else set()
            if len(own) >= MIN_FINGERPRINTS:
                prints[name] = own
        names = list(prints)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                value = containment(prints[first], prints[second])
                if value >= threshold:
                    pairs.append(Pair(ex_id, first, second, round(value, 3),
                                      len(prints[first] & prints[second])))
    return sorted(pairs, key=lambda p: (p.exercise, -p.similarity, p.first, p.second))


def check_threshold(threshold: float) -> float:
    """``threshold`` when it is a number in (0, 1]; raises ValueError naming the range otherwise."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
        raise ValueError(f"the near-copy threshold must be a number above 0 and at most 1, got {threshold!r}")
    return float(threshold)


def pair_flags(pairs: list[Pair], name: str) -> list[str]:
    """The review flags of submission ``name`` for the pairs it is in."""
    return [f"{p.exercise}: near copy of submission {p.second if p.first == name else p.first} "
            f"(similarity {p.similarity:.2f}): review by hand" for p in pairs if name in (p.first, p.second)]
