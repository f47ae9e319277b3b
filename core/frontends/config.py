"""``kernelfuse fit CONFIG.toml``: a model from CSV data and a TOML file.

Sections ``[data]`` (the CSV file, target and feature columns), ``[kernels]`` (the papers'
grid or a list of registered kernels), ``[model]`` (the estimator and its parameters),
``[solver]`` (optional: a solver composed from registered parts) and ``[output]``; the format,
key by key, is in docs/cli.md.  Every section and key is checked: an unknown one is an error
naming it (with close matches), and so is a missing column or a non-numeric value.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kernelfuse.errors import UnknownNameError, ValidationError

if TYPE_CHECKING:
    from kernelfuse.parts.registry import Registry

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SECTIONS: dict[str, set[str] | None] = {
    "data": {"train", "target", "features"},
    "kernels": {"grid", "widths", "degrees", "group_by", "spec"},
    "model": {"estimator", "solver", "family", "C", "C2", "lam", "p", "q", "r", "eps", "loss",
              "normalization", "standardize", "tol", "max_iter", "time_limit", "memory_budget",
              "random_state", "solver_params", "n_jobs", "storage", "storage_dir", "kernel_dtype",
              "check_psd", "views"},
    "output": {"model"},
    "solver": None,  # role names are open: checked by kernelfuse.assembly.composition.compose
}
SPEC_KEYS = {"kernel", "params", "features", "group", "label"}
#: The TOML type of every key whose value is not checked by the estimator at fit (its
#: settings and the family's parameters are: kernelfuse.frontends.estimators, kernelfuse.problem.families).
TYPES: dict[str, dict[str, type]] = {
    "data": {"train": str, "target": str, "features": list},
    "kernels": {"grid": bool, "widths": list, "degrees": list, "group_by": str, "spec": list},
    "model": {"estimator": str, "solver": str, "family": str, "loss": str, "normalization": str,
              "solver_params": dict, "storage": str, "storage_dir": str, "kernel_dtype": str,
              "views": dict},
    "output": {"model": str},
    "spec": {"kernel": str, "params": dict, "features": list, "group": int, "label": str},
}
#: How each TOML type is named in a message.
_TOML_NAMES = {str: "a string", list: "an array", bool: "true or false", dict: "a table",
               int: "an integer"}


def _check_keys(table: dict[str, Any], allowed: set[str], where: str, types: dict[str, type]) -> None:
    """Every key of ``table`` known, and of its TOML type where ``types`` gives one."""
    for key, value in table.items():
        if key not in allowed:
            raise UnknownNameError(f"key in {where}", key, allowed)
        wanted = types.get(key)
        if wanted is not None and (not isinstance(value, wanted) or isinstance(value, bool) and wanted is int):
            raise ValidationError(f"{where}: {key} must be {_TOML_NAMES[wanted]}, got {value!r}")


def load_config(path: str | Path) -> dict[str, Any]:
    """The parsed, checked configuration; file paths made relative to the config's folder."""
    path = Path(path)
    try:
        config = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ValidationError(f"config file {path} does not exist") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{path} is not valid TOML: {exc}") from None
    _check_keys(config, set(SECTIONS), f"{path}", {})
    for section, allowed in SECTIONS.items():
        table = config.setdefault(section, {})
        if not isinstance(table, dict):
            raise ValidationError(f"{path}: [{section}] must be a table")
        if allowed is not None:
            _check_keys(table, allowed, f"[{section}] of {path}", TYPES[section])
    for key in ("train", "target"):
        if key not in config["data"]:
            raise ValidationError(f"{path}: [data] needs the key {key!r}")
    for m, spec in enumerate(config["kernels"].get("spec", [])):
        if not isinstance(spec, dict):
            raise ValidationError(f"{path}: [[kernels.spec]] number {m + 1} must be a table, got {spec!r}")
        _check_keys(spec, SPEC_KEYS, f"[[kernels.spec]] number {m + 1} of {path}", TYPES["spec"])
        if "kernel" not in spec:
            raise ValidationError(f"{path}: [[kernels.spec]] number {m + 1} needs the key 'kernel'")
    if config["kernels"].get("spec") and config["kernels"].get("grid"):
        raise ValidationError(f"{path}: [kernels] has both grid = true and [[kernels.spec]]; choose one")
    base = path.parent
    config["data"]["train"] = base / config["data"]["train"]
    config["output"]["model"] = base / config["output"].get("model", "model.npz")
    return config


def read_csv(path: str | Path, columns: list[str] | None = None,
             exclude: str | None = None) -> tuple[np.ndarray, list[str], dict[str, list[str]]]:
    """Numeric columns of a CSV with a header: ``(values, names, all columns as text)``."""
    path = Path(path)
    try:
        with path.open(newline="") as handle:
            rows = list(csv.reader(handle))
    except FileNotFoundError:
        raise ValidationError(f"data file {path} does not exist") from None
    except OSError as exc:  # a folder, a file without read permission, ...
        raise ValidationError(f"cannot read data file {path}: {exc.strerror or exc}") from None
    if len(rows) < 2:
        raise ValidationError(f"{path} needs a header row and at least one data row")
    header, body = [h.strip() for h in rows[0]], rows[1:]
    for number, row in enumerate(body, start=2):
        if len(row) != len(header):
            raise ValidationError(f"{path}, line {number}: {len(row)} fields, the header has {len(header)}")
    text = {name: [row[i].strip() for row in body] for i, name in enumerate(header)}
    names = [h for h in header if h != exclude] if columns is None else list(columns)
    for name in names:
        if name not in text:
            raise UnknownNameError(f"column of {path}", name, header)
    values = np.empty((len(body), len(names)))
    for j, name in enumerate(names):
        for i, cell in enumerate(text[name]):
            try:
                values[i, j] = float(cell)
            except ValueError:
                raise ValidationError(
                    f"{path}, line {i + 2}, column {name!r}: {cell!r} is not a number"
                ) from None
    if not np.isfinite(values).all():
        i, j = np.argwhere(~np.isfinite(values))[0]
        raise ValidationError(f"{path}, line {i + 2}, column {names[j]!r}: not a finite number")
    return values, names, text


#: The estimators ``[model] estimator`` may name.
ESTIMATORS = ("MKLClassifier", "MKLRegressor")


def build_estimator(config: dict[str, Any], feature_names: list[str], *,
                    registry: Registry | None = None) -> Any:
    """The estimator (``MKLClassifier`` unless ``[model] estimator`` says otherwise) a configuration
    describes, its kernels and solver parts from ``registry`` (None: the installed plugins), which
    it gets as its own."""
    from kernelfuse.frontends import estimators
    from kernelfuse.frontends.kernel_grid import kernel_grid
    from kernelfuse.kernels.functions import KernelSpec
    from kernelfuse.parts.registry import resolve_registry

    plugins = resolve_registry(registry)
    kernels_cfg = config["kernels"]
    if kernels_cfg.get("spec"):
        specs = []
        for m, record in enumerate(kernels_cfg["spec"]):
            columns = record.get("features")
            index = None
            if columns is not None:
                for name in columns:
                    if name not in feature_names:
                        raise UnknownNameError(f"feature of [[kernels.spec]] number {m + 1}", name,
                                               feature_names)
                index = [feature_names.index(name) for name in columns]
            try:
                function = plugins.create("kernel", record["kernel"], **record.get("params", {}))
            except (TypeError, ValidationError) as exc:
                raise ValidationError(f"[[kernels.spec]] number {m + 1}: {exc}") from None
            specs.append(KernelSpec(function, index, int(record.get("group", 0)),
                                    record.get("label", f"{record['kernel']} on {columns or 'all'}")))
        kernels: Any = specs
    elif "views" in config["model"] and not kernels_cfg:
        kernels = "grid"  # each view's own grid (kernelfuse.frontends.kernel_grid.view_grid)
    else:
        grid = {key: kernels_cfg[key] for key in ("widths", "degrees", "group_by") if key in kernels_cfg}
        kernels = kernel_grid(len(feature_names), **grid, registry=plugins)
    params = dict(config["model"])
    if "views" in params:  # {view: [feature column names]} as the estimator's column indices
        views = {}
        for view, columns in params["views"].items():
            if not isinstance(columns, list) or not columns:
                raise ValidationError(f"[model] views.{view} must be a non-empty array of feature "
                                      f"column names, got {columns!r}")
            for name in columns:
                if name not in feature_names:
                    raise UnknownNameError(f"feature of [model] views.{view}", str(name), feature_names)
            views[view] = [feature_names.index(name) for name in columns]
        params["views"] = views
    if config.get("solver"):
        from kernelfuse.assembly.composition import compose

        if "solver" in params:
            raise ValidationError("give either [model] solver or a [solver] table, not both")
        table = dict(config["solver"])
        solver_params = table.pop("params", {})
        if not isinstance(solver_params, dict):
            raise ValidationError(f"[solver] params must be a table, got {solver_params!r}")
        compose(table, registry=plugins).build(plugins, **solver_params)  # every role, name and parameter checked now
        params["solver"] = table  # a mapping: composed again at fit, saved with the model
        params["solver_params"] = {**params.get("solver_params", {}), **solver_params}
    kind = params.pop("estimator", "MKLClassifier")
    if kind not in ESTIMATORS:
        raise UnknownNameError("[model] estimator", str(kind), ESTIMATORS)
    return getattr(estimators, kind)(kernels=kernels, **params, registry=registry)
