"""Every estimator parameter in ``help()``: the numpydoc sections merged along the class hierarchy."""

from __future__ import annotations

import pydoc

import pytest

from kernelfuse import MKLClassifier, MKLRegressor
from kernelfuse.frontends.cv_estimators import MKLClassifierCV, MKLRegressorCV
from kernelfuse.frontends.docstrings import entry_names, inherits_parameter_docs, split_sections
from kernelfuse.frontends.estimators import MultiLabelMKLClassifier

ESTIMATORS = [MKLClassifier, MKLRegressor, MultiLabelMKLClassifier, MKLClassifierCV, MKLRegressorCV]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_help_lists_every_parameter_once(estimator):
    _, sections = split_sections(estimator.__doc__)
    documented = [name for entry in sections["Parameters"] for name in entry_names(entry)]
    assert sorted(documented) == sorted(estimator().get_params(deep=False))
    text = pydoc.render_doc(estimator, renderer=pydoc.plaintext)
    assert all(f"{name} :" in text or f"{name}," in text for name in documented)


def test_a_class_documents_its_own_entries_before_its_bases_and_overrides_them():
    class Base:
        """Base.

        Parameters
        ----------
        a : the base's a
        b, c : the base's b and c
            continued
        """

        __module__ = "kernelfuse.example"  # a class of the package: its entries are merged

    @inherits_parameter_docs
    class Derived(Base):
        """Derived.

        Parameters
        ----------
        d : its own
        a : its own a
        """

        __module__ = "kernelfuse.example"
    text, sections = split_sections(Derived.__doc__)
    assert text == "Derived."
    assert sections["Parameters"] == ["d : its own", "a : its own a", "b, c : the base's b and c\n    continued"]
