"""``grader watch``: check the exercise you are editing on every save, like ``rustlings watch``.

It starts on an exercise (the one named, else the next one not done, as ``grader status``
suggests it), checks it, and then waits for files under DIR to change (``watchfiles``). Each save
of an exercise module makes that exercise the current one and checks it: the public check, and
when that passes the full check (hidden tests, as ``grader score`` runs them, when the kit has
them). It shows the first failing check with its message; when the exercise is done it moves to
the next one. Every result is remembered (``grader.progress``), so ``grader status`` and
``grader list`` know it. It ends when every selected exercise is done, or on Ctrl-C.

On a terminal each check replaces the screen; elsewhere (a pipe, a log) it prints plain lines and
flushes them at once.

This module imports neither torch nor TensorFlow: the checks run in children.
"""

from __future__ import annotations

import threading
from pathlib import Path

from grader import catalog, defaults, progress
from grader.workflows import status

DEBOUNCE_MS = 300  # an editor's save is often several writes; wait for them to settle
RECHECK_MS = 1000  # without events, look at the modules' digests this often anyway


class Watcher:
    """Checks exercises in ``root`` and tells the learner what to do next, on ``console``."""

    def __init__(self, root: Path, exercises: list[catalog.Exercise], console, *,
                 timeout_s: float = defaults.WALL_S, test_timeout_s: float = defaults.TEST_TIMEOUT_S) -> None:
        self.root = Path(root).resolve()
        self.exercises = exercises
        self.console = console
        self.timeout_s, self.test_timeout_s = timeout_s, test_timeout_s
        self.seen: dict[str, str | None] = {}  # the module digest last checked, per exercise

    def say(self, text: str = "", style: str = "") -> None:
        from rich.text import Text

        self.console.print(Text(text, style=style))
        self.console.file.flush()

    def edited(self) -> list[catalog.Exercise]:
        """The exercises whose module changed since it was last seen, the latest saved last."""
        now = progress.module_digests(self.root, self.exercises)
        changed = [ex for ex in self.exercises if now[ex.id] != self.seen.get(ex.id)]
        self.seen.update(now)

        def saved_at(ex: catalog.Exercise) -> float:
            try:
                return (self.root / ex.relpath).stat().st_mtime
            except OSError:
                return 0.0
        return sorted(changed, key=saved_at)

    def first(self, start: catalog.Exercise | None) -> catalog.Exercise | None:
        """Where to begin: ``start``, else the next exercise not done (checking what changed)."""
        if start is not None:
            return start
        self.say(f"checking {len(self.exercises)} exercise(s) in {self.root}...", "dim")
        found = status.collect(self.root, self.exercises, timeout_s=self.timeout_s,
                               test_timeout_s=self.test_timeout_s)
        nxt = found.next_exercise()
        return nxt.exercise if nxt else None

    def next_after(self, current: catalog.Exercise) -> catalog.Exercise | None:
        """The next exercise not done, from what is remembered (an unchecked one is not done)."""
        store = progress.Store()
        rows = [status.remembered_status(ex, self.root, store) or status.ExerciseStatus(ex, status.NOT_STARTED)
                for ex in self.exercises if ex != current]
        nxt = status.Progress(self.root, rows, 0.0).next_exercise()
        return nxt.exercise if nxt else None

    def check(self, ex: catalog.Exercise) -> status.ExerciseStatus:
        """Run the public check of ``ex`` and, when it passes, its full check; show the outcome."""
        if self.console.is_terminal:
            self.console.clear()
        self.say(f"checking {ex.id}...", "dim")
        self.seen[ex.id] = progress.file_digest(self.root / ex.relpath)  # a save during the check counts
        found = status.collect(self.root, [ex], full=True, timeout_s=self.timeout_s,
                               test_timeout_s=self.test_timeout_s)
        result = found.exercises[0]
        self.show(result)
        for problem in found.problems:
            self.say(f"problem: {problem}", "bold red")
        return result

    def show(self, s: status.ExerciseStatus) -> None:
        ex, path = s.exercise, self.root / s.exercise.relpath
        head = f"{ex.id} ({ex.difficulty}, {ex.minutes} min): {ex.title}"
        if s.state == status.DONE:
            self.say(f"done: {head}", "bold green")
            self.say(f"  full check {s.full.points}")
        elif s.state == status.NOT_STARTED:
            self.say(f"not started: {head}", "yellow")
            self.say(f"  edit {path}; `grader hint {ex.id}` shows hints")
        elif s.state == status.MISSING:
            self.say(f"missing: {head}", "magenta")
            self.say(f"  no file {path}: `grader reset {ex.id}` puts the stub back")
        elif s.state == status.ERROR:
            self.say(f"error: {head}", "bold magenta")
            self.say(f"  {s.detail}")
        elif s.state == status.PUBLIC_PASS:
            self.say(f"public checks pass: {head}", "cyan")
            self.say("  this kit has no hidden tests for it: they run when your work is graded")
        else:
            full_failed = s.full is not None and s.public is not None and s.public.state == progress.PASS
            if full_failed:
                self.say(f"failing: {head}: public checks pass, full check {s.full.points}", "red")
                name, message = s.full.first_failure.split(": ", 1)[0], s.full.message
            else:
                self.say(f"failing: {head}: {s.public_text} public checks", "red")
                name, message = s.public.detail.split(": ", 1)[0], s.public.message or s.public.detail
            self.say(f"first failing check: {name}", "bold")
            self.say(message.strip())
            self.say(f"  edit {path}")

    def settle(self, current: catalog.Exercise) -> catalog.Exercise | None:
        """Check ``current``; while it is done, move on to the next one and check that. Returns
        the exercise to work on, None (after saying so) when every one is done."""
        while self.check(current).state == status.DONE:
            current = self.next_after(current)
            if current is None:
                self.say(status.ALL_DONE, "bold green")
                return None
            self.say(f"next: {current.id}", "bold")
        return current

    def run(self, start: catalog.Exercise | None, *, stop_event: threading.Event | None = None) -> int:
        """Check, then watch and check again on every save until all is done; returns the exit
        status (0: all done or stopped)."""
        import watchfiles

        current = self.first(start)
        self.seen = progress.module_digests(self.root, self.exercises)
        if current is None:
            self.say(status.ALL_DONE, "bold green")
            return 0
        current = self.settle(current)
        if current is None:
            return 0
        self.say(f"watching {self.root} for saves (Ctrl-C to stop)", "dim")
        try:
            # Events only wake the loop; the digests say what changed. A periodic wake-up also
            # catches a save made before the watcher started or an event a file system dropped.
            for _ in watchfiles.watch(self.root, watch_filter=watchfiles.PythonFilter(), debounce=DEBOUNCE_MS,
                                      rust_timeout=RECHECK_MS, yield_on_timeout=True, stop_event=stop_event):
                edited = self.edited()
                if not edited:
                    continue
                current = self.settle(current if current in edited else edited[-1])
                if current is None:
                    return 0
                self.say(f"watching {self.root} for saves (Ctrl-C to stop)", "dim")
        except KeyboardInterrupt:
            pass
        self.say("stopped watching")
        return 0
