"""griffe extension: the API pages' docstrings as ``help()`` shows them.

mkdocstrings reads docstrings from the source.  The estimators document only their own
parameters there; :func:`kernelfuse.frontends.docstrings.inherits_parameter_docs` merges
the entries of their bases into ``__doc__`` at import.  For every class of
``kernelfuse.frontends`` with numpydoc sections, the page takes ``__doc__`` as Python holds it,
split by the same :func:`~kernelfuse.frontends.docstrings.split_sections`, each entry's
``name : description`` line read as a description, and parsed as numpydoc.  Sphinx roles
(``:func:`~a.b```), which mkdocstrings would show as typed, become code.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import griffe

from kernelfuse.frontends.docstrings import split_sections

#: A Sphinx cross-reference role, ``:func:`~kernelfuse.a.b``` (mkdocstrings shows roles as typed).
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):`(~?)([^`]+)`")
#: An entry's first line, ``name : description`` (names with commas, a multi-name entry).
ENTRY = re.compile(r"^([A-Za-z_][\w, ]*) : (.+)$", re.M)


def plain_roles(text: str) -> str:
    """Sphinx roles as code: ``:func:`~a.b.c``` -> ```c```, ``:class:`a.b``` -> ```a.b```."""
    return ROLE.sub(lambda m: f"``{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}``", text)


class MergedDocstrings(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)

    def on_class_members(self, *, cls: griffe.Class, **kwargs: Any) -> None:
        if not cls.path.startswith("kernelfuse.frontends."):
            return
        runtime = getattr(importlib.import_module(cls.module.path), cls.name, None)
        preamble, sections = split_sections(getattr(runtime, "__doc__", None))
        if not sections:  # no numpydoc sections
            return
        lineno = cls.docstring.lineno if cls.docstring else cls.lineno
        # "name : what it is" is one line of help() (a description, not a type): the page puts
        # it under the name, where numpydoc puts a description
        text = plain_roles("\n\n".join([preamble] + [
            f"{title}\n{'-' * len(title)}\n" + "\n".join(ENTRY.sub(r"\1\n    \2", entry, count=1) for entry in entries)
            for title, entries in sections.items()]))
        # the signature with the parameters a decorator adds (class_weight) exists at run time
        # only: the source's lacks them, which griffe would report as unknown parameters
        cls.docstring = griffe.Docstring(text, lineno=lineno, parent=cls,
                                         parser="numpy", parser_options={"warn_unknown_params": False,
                                                                        "warn_missing_types": False})
