"""The estimators' docstrings: every parameter in ``help()``, each written once.

Each estimator class documents only its own parameters and attributes, in numpydoc sections
(``Parameters`` / ``Attributes``, entries ``name : description``, continuation lines indented);
:func:`inherits_parameter_docs` appends to a class's ``__doc__`` the entries of the classes it
derives from that it does not document itself, so that ``help(MKLClassifierCV)`` lists every
parameter of its signature while the shared ones stay written once, in
:class:`~kernelfuse.frontends.estimators.MKLEstimator`.
"""

from __future__ import annotations

import inspect
import re
from typing import TypeVar

#: The numpydoc sections merged along the class hierarchy, in this order.
SECTIONS = ("Parameters", "Attributes")
_HEADING = re.compile(r"^(\w+)\n-+\n", re.M)
_Class = TypeVar("_Class", bound=type)


def split_sections(doc: str | None) -> tuple[str, dict[str, list[str]]]:
    """``doc`` cleaned (:func:`inspect.cleandoc`): its text before the first numpydoc section, and
    each section's entries (an unindented ``name : ...`` line with its indented continuation)."""
    parts = _HEADING.split(inspect.cleandoc(doc or ""))
    sections = {title: re.split(r"\n(?=\S)", body.strip("\n")) if body.strip() else []
                for title, body in zip(parts[1::2], parts[2::2])}
    return parts[0].rstrip(), sections


def entry_names(entry: str) -> set[str]:
    """The names an entry documents: ``"C, C2, lam : ..."`` -> ``{"C", "C2", "lam"}``."""
    return {name.strip() for name in entry.split(" :", 1)[0].split(",")}


def inherits_parameter_docs(cls: _Class) -> _Class:
    """A class decorator: ``cls.__doc__`` with, in each of :data:`SECTIONS`, its own entries and
    then those of its bases (nearest first) for names it does not document; the class's own
    docstring is kept as ``__own_doc__`` for the classes deriving from it."""
    cls.__own_doc__ = cls.__dict__.get("__doc__")  # type: ignore[attr-defined]
    text, _ = split_sections(cls.__own_doc__)  # type: ignore[attr-defined]
    merged: dict[str, list[str]] = {title: [] for title in SECTIONS}
    seen: dict[str, set[str]] = {title: set() for title in SECTIONS}
    for klass in cls.__mro__:
        if not klass.__module__.startswith("kernelfuse"):  # scikit-learn's mixins: not ours to list
            continue
        _, sections = split_sections(klass.__dict__.get("__own_doc__", klass.__dict__.get("__doc__")))
        for title in SECTIONS:
            for entry in sections.get(title, []):
                names = entry_names(entry)
                if not names & seen[title]:
                    merged[title].append(entry)
                    seen[title] |= names
    cls.__doc__ = "\n\n".join([text, *(f"{title}\n{'-' * len(title)}\n" + "\n".join(merged[title])
                                       for title in SECTIONS if merged[title])])
    return cls
