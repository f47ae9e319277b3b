"""The exceptions kernelfuse raises.

Every error a user can cause is a :class:`KernelfuseError`; each also derives
from the built-in exception a Python user would expect (``ValueError`` for bad
values, ``LookupError`` for unknown names, ``TypeError`` for parts that do not
fit together), so ``except ValueError`` keeps working around kernelfuse calls.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Iterable


class KernelfuseError(Exception):
    """Base class of every error kernelfuse raises on purpose."""


class ValidationError(KernelfuseError, ValueError):
    """Input data or a parameter is not acceptable (shape, NaN, range, ...)."""


class UnknownNameError(KernelfuseError, LookupError):
    """A solver, family, loss or other component name is not registered.

    The message lists the closest registered names, then all of them.
    """

    def __init__(self, kind: str, name: str, known: Iterable[str]) -> None:
        known = sorted(known)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        message = f"unknown {kind} {name!r}"
        if close:
            message += "; did you mean " + " or ".join(repr(c) for c in close) + "?"
        else:
            message += "."
        message += f" Known {kind} names: {', '.join(known) if known else '(none)'}."
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.known = known
        self.close_matches = close

    def __str__(self) -> str:  # LookupError would quote the message otherwise
        return str(self.args[0])

    def __reduce__(self) -> tuple[type, tuple[str, str, list[str]]]:
        """Pickled by what it was built from (a worker process sends it back to the caller)."""
        return type(self), (self.kind, self.name, self.known)


class IncompatiblePartsError(KernelfuseError, TypeError):
    """Parts assembled into a solver, or a solver and a problem, do not fit."""


class SolverError(KernelfuseError, RuntimeError):
    """A solver failed numerically and has no answer to return."""


class FileWriteError(KernelfuseError, OSError):
    """Writing an output file failed; the file that was there before is intact
    (:func:`kernelfuse.runtime.files.atomic_write`)."""


_lock = threading.Lock()


def __getattr__(name: str) -> type[UserWarning]:
    """``ConvergenceWarning``, made on first use (PEP 562).

    A subclass of scikit-learn's ``ConvergenceWarning``, so that scikit-learn's usual filter
    (``warnings.filterwarnings("ignore", category=sklearn.exceptions.ConvergenceWarning)``)
    silences it too.  Made when first read, not when kernelfuse is imported: importing
    scikit-learn costs about 0.6 s, and ``import kernelfuse`` does not need it.
    """
    if name != "ConvergenceWarning":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _lock:
        if name not in globals():
            from sklearn.exceptions import ConvergenceWarning as SklearnConvergenceWarning

            class ConvergenceWarning(SklearnConvergenceWarning):
                """A solver stopped before reaching its tolerance (the result says why)."""

            ConvergenceWarning.__module__, ConvergenceWarning.__qualname__ = __name__, name  # pickled by name
            globals()[name] = ConvergenceWarning
    return globals()[name]
