"""The ``kernelfuse`` command (also ``python -m kernelfuse``).

``kernelfuse solve PROBLEM.npz --solver NAME ... --output RESULT.npz`` solves one problem
(``--set NAME=VALUE`` passes any other parameter of the solver or its parts; ``--kernels K.npy``
memory-maps a stack too large for memory); ``fit`` and ``predict`` train and apply a model from
CSV data and a TOML config (:mod:`kernelfuse.frontends.config`); ``demo`` runs the main job;
``plugins`` and ``families`` list the registered components and the problem families.  Exit
status 0 on success, 1 when a solver fails, 2 for bad input or paths, 130 when interrupted, each
with one line on stderr; output paths are used exactly as given and checked before any work.
Progress goes to stderr through :mod:`logging` at INFO (``--quiet``: none;
:mod:`kernelfuse.runtime.logs`).
Every option: docs/cli.md.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelfuse.assembly.result import FAILED_STATUSES, FINISHED_STATUSES
from kernelfuse.errors import KernelfuseError, SolverError, ValidationError
from kernelfuse.frontends.progress import ProgressPrinter
from kernelfuse.problem.families import FAMILIES, all_families, get_family
from kernelfuse.runtime.files import atomic_write, check_output_path
from kernelfuse.runtime.logs import log_to_stderr
from kernelfuse.runtime.npz_file import read_npz, read_numpy_file

#: The first bytes of a .npy file.
NPY_MAGIC = b"\x93NUMPY"
#: Arrays a PROBLEM.npz may hold.
PROBLEM_KEYS = ("K", "y", "Y", "groups")
#: Exit status of an interrupted command (128 + SIGINT, as shells report it).
INTERRUPTED = 130
#: Family, loss and solver parameters the CLI passes on when given.
PARAMETER_OPTIONS = ("C", "C2", "lam", "p", "q", "r", "eps", "tol", "max_iter", "time_limit", "seed")
#: Arguments of kernelfuse.solve that are not solver parameters: where each comes from instead of --set.
NOT_SETTINGS = {"check_psd": "its own option, --check-psd {auto,true,false}",
                "solver": "its own option, --solver NAME", "family": "its own option, --family F",
                "loss": "its own option, --loss L", "groups": "the problem file's array 'groups'",
                "K": "the problem file (or --kernels)", "y": "the problem file",
                "callback": "no option (the CLI prints progress)",
                "registry": "no option (the installed plugins)"}


def load_problem_file(path: str, kernels: str | None = None) -> dict[str, np.ndarray]:
    """Arrays of a PROBLEM.npz (``K``, ``y`` or ``Y``, optional ``groups``); with ``kernels``,
    ``K`` is that ``.npy`` file memory-mapped read-only, and PROBLEM.npz must not hold one."""
    arrays = read_npz(path, "problem")
    unknown = sorted(set(arrays) - set(PROBLEM_KEYS))
    if unknown:
        raise ValidationError(
            f"problem file {path} has unexpected array(s) {', '.join(unknown)}; "
            f"allowed: {', '.join(PROBLEM_KEYS)}"
        )
    if kernels is not None:
        if "K" in arrays:
            raise ValidationError(f"problem file {path} holds 'K' and --kernels {kernels} was given: "
                                  "give the kernels once")
        arrays["K"] = memory_mapped_kernels(kernels)
    if "K" not in arrays:
        raise ValidationError(f"problem file {path} has no array 'K' (kernels, shape (M, N, N))")
    if ("y" in arrays) == ("Y" in arrays):
        raise ValidationError(
            f"problem file {path} must hold exactly one of 'y' (N,) or 'Y' (N, L)"
        )
    return arrays


def memory_mapped_kernels(path: str) -> np.ndarray:
    """The ``.npy`` kernel stack at ``path`` memory-mapped read-only (float64 or float32)."""
    K = read_numpy_file(path, "kernels", ".npy", NPY_MAGIC, "a .npy file (numpy.save writes one)",
                        lambda: np.load(path, mmap_mode="r", allow_pickle=False))
    if K.dtype not in (np.float64, np.float32):
        raise ValidationError(f"kernels file {path} holds {K.dtype}; a memory-mapped stack must be "
                              "float64 or float32")
    return K


def _cmd_solve(args: argparse.Namespace) -> int:
    from kernelfuse.assembly.api import solve

    if args.shards is not None:
        return _cmd_solve_shards(args)
    for given, name in ((args.targets, "--targets"), (args.scheduler, "--scheduler"), (args.rank, "--rank")):
        if given is not None:
            raise ValidationError(f"{name} goes with --shards (a solve on a Dask cluster), not with PROBLEM.npz")
    if args.problem is None:
        raise ValidationError("give PROBLEM.npz, or --shards and --targets for rows stored in shard files")
    if args.solver is None:
        raise ValidationError("--solver: name the solver of PROBLEM.npz (see 'kernelfuse plugins')")
    output = check_output_path(args.output)
    arrays = load_problem_file(args.problem, args.kernels)
    params: dict[str, Any] = {
        name: getattr(args, name) for name in PARAMETER_OPTIONS if getattr(args, name) is not None
    }
    for name, value in args.set or ():
        if name in NOT_SETTINGS:
            raise ValidationError(f"--set {name}={value}: {name} is not a solver parameter; it comes "
                                  f"from {NOT_SETTINGS[name]}")
        if name in params:
            raise ValidationError(f"parameter {name!r} given twice (an option and --set)")
        params[name] = value
    groups = arrays.get("groups")
    if groups is not None and args.family is not None and not get_family(args.family).uses_groups:
        # One problem file serves every family; only the grouped ones read its groups.
        if not args.quiet:
            print(f"kernelfuse: note: family {args.family} does not use groups; "
                  "ignoring 'groups'", file=sys.stderr)
        groups = None
    result = solve(
        arrays["K"], arrays["y"] if "y" in arrays else arrays["Y"],
        solver=args.solver, family=args.family, loss=args.loss,
        groups=groups, check_psd=args.check_psd,
        callback=ProgressPrinter.wanted(), **params,
    )
    result.save(output)
    if not args.quiet:
        selected = (
            "" if result.kernel_weights is None
            else f", {int(np.sum(result.kernel_weights > 1e-6))} of "
                 f"{result.kernel_weights.size} kernels selected"
        )
        print(
            f"{result.solver} on {result.family}: objective {result.objective:.10g}, "
            f"dual {result.dual_objective:.10g}, gap {result.gap:.3g}, "
            f"{result.n_iter} iterations, {result.time:.2f}s, {result.status}{selected}; "
            f"wrote {output}"
        )
    if result.status == "interrupted":
        print(f"kernelfuse: interrupted: wrote the best model so far to {output}", file=sys.stderr)
        return INTERRUPTED
    return 1 if result.status in FAILED_STATUSES else 0


def _shard_rows(args: argparse.Namespace) -> tuple[Any, Any, list[str] | None]:
    """The features and targets of ``--shards`` and ``--targets`` as row-partitioned dask arrays,
    and the features' column names (Parquet shards; None for ``.npy`` shards)."""
    import glob

    from kernelfuse.distributed.features import read_shards

    paths = sorted(glob.glob(args.shards))
    if not paths:
        raise ValidationError(f"--shards {args.shards!r}: no file matches (a glob such as 'data/X_*.npy')")
    if args.targets is None:
        raise ValidationError("--targets: give the targets' shard files (a glob), or the target column "
                              "of Parquet shards")
    if all(path.endswith(".parquet") for path in paths):
        import pyarrow.parquet as pq

        names = list(pq.ParquetFile(paths[0]).schema_arrow.names)
        if args.targets not in names:
            raise ValidationError(f"--targets {args.targets!r}: no such column in {paths[0]} "
                                  f"(it has {', '.join(names)})")
        features = [name for name in names if name != args.targets]
        return read_shards(paths, columns=features), read_shards(paths, columns=[args.targets])[:, 0], features
    target_paths = sorted(glob.glob(args.targets))
    if len(target_paths) != len(paths):
        raise ValidationError(f"--targets {args.targets!r}: {len(target_paths)} files for {len(paths)} shards of "
                              "--shards; give one targets file per shard, in the same sorted order")
    X, y = read_shards(paths), read_shards(target_paths)
    if X.chunks[0] != y.chunks[0]:
        raise ValidationError("--targets: each targets file must have the rows of its shard, in the same "
                              f"sorted order (rows {X.chunks[0][:5]} against {y.chunks[0][:5]})")
    return X, y, None


def _cmd_solve_shards(args: argparse.Namespace) -> int:
    """``kernelfuse solve --shards``: the estimators' fit on a Dask cluster, the model saved as
    ``model.save`` writes it (``kernelfuse predict`` reads it), with Parquet shards' feature names."""
    import contextlib
    import os

    from kernelfuse.distributed.cluster import client_for, local_cluster
    from kernelfuse.frontends.estimators import MKLClassifier, MKLRegressor
    from kernelfuse.frontends.persistence import save_model
    from kernelfuse.parts.registry import resolve_registry

    for given, name in ((args.problem, "PROBLEM.npz"), (args.kernels, "--kernels"), (args.solver, "--solver"),
                        (args.set, "--set")):
        if given is not None:
            raise ValidationError(f"{name} is not taken with --shards: the rows of the shards are solved by the "
                                  "distributed Newton solver on the estimators' kernel grid")
    if args.family not in (None, "l1_mkl", "pnorm_mkl"):
        raise ValidationError(f"--family {args.family}: a solve on a Dask cluster minimises l1_mkl or pnorm_mkl")
    if args.rank is not None and args.rank < 1:
        raise ValidationError(f"--rank must be a positive number of landmarks, got {args.rank}")
    pnorm = args.family == "pnorm_mkl"
    loss = resolve_registry(None).create("loss", args.loss or ("hinge" if pnorm else "logistic"))  # installed
    if pnorm and loss.name != "hinge":
        raise ValidationError(f"--loss {loss.name}: --family pnorm_mkl on a cluster takes the binary hinge")
    output = check_output_path(args.output)
    X, y, names = _shard_rows(args)
    settings = {"C": args.C, "C2": args.C2, "lam": args.lam, "p": args.p, "family": args.family,
                "loss": None if pnorm else loss.name, "max_iter": args.max_iter,
                "time_limit": args.time_limit, "random_state": args.seed,
                "solver_params": None if args.rank is None else {"rank": args.rank}}
    if args.tol is not None:
        settings["tol"] = args.tol
    model = (MKLRegressor if loss.target == "real" else MKLClassifier)(**settings)
    with contextlib.ExitStack() as stack:
        if args.scheduler is not None:
            client = stack.enter_context(client_for(args.scheduler))
        else:  # this machine's cores, one worker process each
            import distributed

            cluster = stack.enter_context(local_cluster(os.cpu_count() or 1))
            client = stack.enter_context(distributed.Client(cluster))
        stack.enter_context(client.as_current())
        model.fit(X, y)
    save_model(model, output, metadata={"features": names} if names else None)
    fitted = model.feature_models_
    if not args.quiet:
        for k, result in enumerate(fitted):
            label = f"problem {k + 1} of {len(fitted)}: " if len(fitted) > 1 else ""
            print(f"{label}distributed Newton on {result.family} ({result.loss}): objective {result.objective:.10g}, "
                  f"dual {result.dual_objective:.10g}, gap {result.gap:.3g}, {result.n_iter} iterations, "
                  f"{result.passes} passes, {result.time:.2f}s, {result.status}")
        print(f"wrote {output} (kernelfuse predict {output} DATA --output PREDICTIONS.csv, or "
              "kernelfuse.load_model)")
    return 1 if any(r.status in FAILED_STATUSES for r in fitted) else 0


def _recipe_parts(recipe: object) -> str:
    """``role=name`` for every part of a recipe, and its non-default settings."""
    parts = ", ".join(f"{role}={name}" for role, (_, name) in getattr(recipe, "parts", {}).items())
    defaults = ", ".join(f"{key}={value!r}" for key, value in getattr(recipe, "defaults", {}).items())
    assembler = getattr(getattr(recipe, "assembler", None), "__name__", "")
    return f"{assembler}({parts})" + (f" with {defaults}" if defaults else "")


def _cmd_plugins(args: argparse.Namespace) -> int:
    from kernelfuse.assembly.recipe import Recipe
    from kernelfuse.parts.registry import KIND_ALIASES, get_registry

    kind = KIND_ALIASES.get(args.kind, args.kind)  # --kind solver: the former name of recipe
    registry = get_registry()
    if args.recipes:
        recipes = [e for e in registry if e.kind == "recipe" and isinstance(e.factory, Recipe)]
        width = max(len(e.name) for e in recipes)
        for entry in recipes:
            print(f"{entry.name:{width}}  {_recipe_parts(entry.factory)}")
        return 0
    rows = [
        (e.kind, e.name, e.provider, e.description)
        for e in registry
        if kind is None or e.kind == kind
    ]
    if not rows:
        print(f"no components of kind {kind!r} are registered")
        return 0
    widths = [max(len(r[i]) for r in rows + [("kind", "name", "distribution", "")])
              for i in range(3)]
    print(f"{'kind':{widths[0]}}  {'name':{widths[1]}}  {'distribution':{widths[2]}}  description")
    for kind, name, provider, description in rows:
        print(f"{kind:{widths[0]}}  {name:{widths[1]}}  {provider:{widths[2]}}  {description}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from kernelfuse.frontends.demo import run_demo

    figures = run_demo(args.output, quick=args.quick, quiet=args.quiet, solver=args.solver)
    return 0 if figures["status"] in FINISHED_STATUSES else 1


def _cmd_fit(args: argparse.Namespace) -> int:
    from kernelfuse.frontends.config import build_estimator, load_config, read_csv
    from kernelfuse.frontends.estimators import MKLRegressor
    from kernelfuse.frontends.persistence import save_model

    config = load_config(args.config)
    output = check_output_path(config["output"]["model"] if args.output is None else args.output,
                               "model")
    data = config["data"]
    X, names, text = read_csv(data["train"], data.get("features"), exclude=data["target"])
    if data["target"] not in text:
        raise ValidationError(f"{data['train']} has no target column {data['target']!r}")
    model = build_estimator(config, names)
    regression = isinstance(model, MKLRegressor)
    y = read_csv(data["train"], [data["target"]])[0][:, 0] if regression \
        else np.array(text[data["target"]])
    model.fit(X, y)
    save_model(model, output, metadata={"features": names, "target": data["target"]})
    if not args.quiet:
        print(f"trained on {X.shape[0]} rows x {X.shape[1]} features, {len(model.kernels_)} kernels: "
              f"training {'R^2' if regression else 'accuracy'} {model.score(X, y):.3f}, "
              f"{int(np.sum(model.kernel_weights_ > 1e-3))} kernels selected, "
              f"largest gap {max(r.gap for r in model.results_):.1e}; wrote {output}")
    return 1 if any(r.status in FAILED_STATUSES for r in model.results_) else 0


def _cmd_predict(args: argparse.Namespace) -> int:
    from kernelfuse.frontends.config import read_csv
    from kernelfuse.frontends.persistence import load_model

    output = None if args.output == "-" else check_output_path(args.output, "predictions")
    model = load_model(args.model)
    features = model.metadata_.get("features")
    if str(args.data).endswith(".npy"):
        X = read_numpy_file(args.data, "data", ".npy", NPY_MAGIC, "a .npy array",
                            lambda: np.load(args.data, allow_pickle=False))
        if X.ndim != 2 or X.shape[1] != model.n_features_in_ or X.dtype.kind not in "biuf":
            raise ValidationError(f"{args.data} must be a numeric array (n, {model.n_features_in_}) of the model's "
                                  f"features, got dtype {X.dtype} and shape {X.shape}")
    elif not features:
        raise ValidationError(f"{args.model} records no feature columns (saved without them): give DATA as a "
                              ".npy array of the features in the training order")
    else:
        X, _, _ = read_csv(args.data, features)
    predictions = model.predict(X)
    scores = model.decision_function(X) if hasattr(model, "decision_function") else None
    if output is None:
        _write_predictions(sys.stdout, model, predictions, scores)
        return 0
    with atomic_write(output, "w", newline="") as handle:
        _write_predictions(handle, model, predictions, scores)
    print(f"wrote {len(predictions)} predictions to {output}")
    return 0


def _write_predictions(handle: Any, model: Any, predictions: np.ndarray, scores: np.ndarray | None) -> None:
    """The CSV ``predict`` writes: ``prediction`` and its score(s), one row per data row."""
    import csv

    writer = csv.writer(handle)
    if scores is None:  # a regressor: the prediction is the score
        writer.writerow(["prediction"])
        writer.writerows([f"{v:.10g}"] for v in predictions)
    elif scores.ndim == 1:
        writer.writerow(["prediction", "score"])
        writer.writerows(zip(predictions, (f"{v:.10g}" for v in scores)))
    else:
        writer.writerow(["prediction", *(f"score_{c}" for c in model.classes_)])
        writer.writerows([p, *(f"{v:.10g}" for v in row)] for p, row in zip(predictions, scores))


def _cmd_families(args: argparse.Namespace) -> int:
    for family in all_families().values():
        params = ", ".join(
            f"{p.name}={p.default:g}" for p in family.params
        )
        print(f"{family.name:10}  {family.title}\n{'':10}  parameters: {params}")
    return 0


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("NaN is not a valid parameter")
    return value


def _check_psd(text: str) -> str | bool:
    """``--check-psd``: auto, true or false."""
    choices: dict[str, str | bool] = {"auto": "auto", "true": True, "false": False}
    if text.strip().lower() not in choices:
        raise argparse.ArgumentTypeError(f"--check-psd must be auto, true or false, got {text!r}")
    return choices[text.strip().lower()]


def _setting(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` with VALUE read as an integer, a number, true/false, or else text."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    value: Any = raw
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        value = lowered == "true"
    else:
        for kind in (int, float):
            try:
                value = kind(raw)
                break
            except ValueError:
                continue
    if isinstance(value, float) and math.isnan(value):
        raise argparse.ArgumentTypeError(f"{text!r}: NaN is not a valid value of {name.strip()}")
    return name.strip().replace("-", "_"), value


def version_line() -> str:
    """``kernelfuse X (Python ..., numpy ..., scipy ..., scikit-learn ...)``: the versions a bug
    report needs, read from the installed distributions (nothing is imported)."""
    import importlib.metadata
    import platform

    others = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in ("numpy", "scipy", "scikit-learn"))
    return f"kernelfuse {importlib.metadata.version('kernelfuse')} (Python {platform.python_version()}, {others})"


def _family_parameter_help() -> dict[str, str]:
    """Each family parameter's help: what it is in each family that takes it (OBJECTIVES.md)."""

    meanings: dict[str, dict[str, list[str]]] = {}
    for family in FAMILIES.values():
        for param in family.params:
            meanings.setdefault(param.name, {}).setdefault(param.doc, []).append(family.name)
    return {name: "; ".join(f"{doc} ({', '.join(families)})" for doc, families in docs.items())
            for name, docs in meanings.items()}


def build_parser() -> argparse.ArgumentParser:
    from kernelfuse.parts.registry import KIND_ALIASES, KINDS

    parser = argparse.ArgumentParser(
        prog="kernelfuse", description="Multiple Kernel Learning from registered parts.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the version line unwrapped
    )
    parser.add_argument("--version", action="version", version=version_line(),
                        help="print kernelfuse's version and those of Python, numpy, scipy and scikit-learn")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    solve = commands.add_parser("solve", help="solve a problem stored as PROBLEM.npz")
    solve.add_argument("problem", metavar="PROBLEM.npz", nargs="?",
                       help="arrays K (M, N, N), y (N,) or Y (N, L), optional groups (M,); or give --shards")
    solve.add_argument("--solver", help="registered solver name (see 'kernelfuse plugins'); needed with PROBLEM.npz")
    solve.add_argument("--family", help="problem family (see 'kernelfuse families')")
    solve.add_argument("--loss", help="registered loss name (family l1_mkl)")
    for name, text in _family_parameter_help().items():
        solve.add_argument(f"--{name}", type=_number, metavar="X", help=text)
    solve.add_argument("--eps", type=_number, metavar="X",
                       help="the width of the eps-insensitive loss (--loss eps-insensitive)")
    solve.add_argument("--tol", type=_number, metavar="X",
                       help="stop at a certified relative duality gap at most X (status converged); "
                            "default: the solver's")
    solve.add_argument("--max-iter", dest="max_iter", type=int, metavar="N",
                       help="stop after N outer iterations (status max_iter); default: the solver's")
    solve.add_argument("--time-limit", dest="time_limit", type=_number, metavar="SECONDS",
                       help="stop after SECONDS of solving with the best model so far (status time_limit)")
    solve.add_argument("--seed", type=int, metavar="S",
                       help="seed of the stochastic solvers (obscure, mlmkl-sa, ...); others refuse it")
    solve.add_argument("--set", type=_setting, action="append", metavar="NAME=VALUE",
                       help="any other solver or part parameter (repeatable), e.g. growth=3 "
                            "or svm_solver=libsvm; an unknown name lists the accepted ones")
    solve.add_argument("--kernels", metavar="K.npy",
                       help="the kernel stack (M, N, N) as a .npy file, float64 or float32, "
                            "memory-mapped instead of read into memory; PROBLEM.npz then holds no K")
    solve.add_argument("--shards", metavar="GLOB",
                       help="instead of PROBLEM.npz: rows of features in shard files (.npy arrays (N_k, d), or "
                            "Parquet files), solved on a Dask cluster: l1_mkl (or --family pnorm_mkl) with the "
                            "estimators' kernel grid as Nystrom kernels (docs/scaling.md); the fitted model is "
                            "saved to --output")
    solve.add_argument("--targets", metavar="GLOB",
                       help="with --shards: the targets' .npy files, one per shard in the same sorted order; "
                            "for Parquet shards, the name of the target column")
    solve.add_argument("--scheduler", metavar="ADDRESS",
                       help="with --shards: the Dask scheduler to solve on (tcp://host:8786); default: "
                            "worker processes on this machine's cores")
    solve.add_argument("--rank", type=int, metavar="R",
                       help="with --shards: landmarks of each Nystrom kernel (default 100)")
    solve.add_argument("--output", required=True, metavar="RESULT.npz",
                       help="where the result is written (atomically: a failed run leaves no file); with "
                            "--shards, the fitted model ('kernelfuse predict' reads it)")
    solve.add_argument("--quiet", action="store_true", help="print nothing on success")
    solve.add_argument("--check-psd", type=_check_psd, default="auto", metavar="{auto,true,false}",
                       help="how hard the kernels are checked for PSD: auto (default) a certificate "
                            "costing about one read of the stack, true the exact O(M N^3) "
                            "eigenvalues, false none (kernels known to be PSD)")
    solve.set_defaults(run=_cmd_solve)

    plugins = commands.add_parser("plugins", help="list registered components")
    plugins.add_argument("--kind", choices=(*KINDS, *KIND_ALIASES),
                         help="only this kind (solver: the former name of recipe)")
    plugins.add_argument("--recipes", action="store_true",
                         help="each named solver's parts (role=registered name) and settings")
    plugins.set_defaults(run=_cmd_plugins)

    demo = commands.add_parser("demo", help="the main job: MKL on breast cancer with the kernel grid")
    demo.add_argument("--output", default="demo-output", help="folder for the result and the plots")
    demo.add_argument("--solver", default="spicymkl",
                      help="registered solver: spicymkl (the default, l1_mkl, logistic, C=0.3) or "
                           "another of family l1_mkl_sq (C=100)")
    demo.add_argument("--quick", action="store_true", help="a small grid (93 kernels) instead of 837")
    demo.add_argument("--quiet", action="store_true", help="no progress or summary")
    demo.set_defaults(run=_cmd_demo)

    fit = commands.add_parser("fit", help="train a model from a TOML config and CSV data")
    fit.add_argument("config", metavar="CONFIG.toml", help="see kernelfuse.frontends.config / docs/tutorial.md")
    fit.add_argument("--output", metavar="MODEL.npz", help="overrides [output] model")
    fit.add_argument("--quiet", action="store_true", help="print nothing on success")
    fit.set_defaults(run=_cmd_fit)

    predict = commands.add_parser("predict", help="predict with a saved model")
    predict.add_argument("model", metavar="MODEL.npz",
                         help="a model written by 'kernelfuse fit', 'kernelfuse solve --shards' or model.save()")
    predict.add_argument("data", metavar="DATA",
                         help="a CSV with the training feature columns (by the names the model records), "
                              "or a .npy array (n, d) of the features in the training order")
    predict.add_argument("--output", required=True, metavar="PREDICTIONS.csv",
                         help="where the predictions are written, one per row of DATA ('-': standard output)")
    predict.set_defaults(run=_cmd_predict)

    families = commands.add_parser("families", help="list the problem families")
    families.set_defaults(run=_cmd_families)
    return parser


def _show_warning(message: Warning | str, category: type[Warning], *args: Any, **kw: Any) -> None:
    print(f"kernelfuse: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure is one line on stderr and an exit status (docs/cli.md)."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("kernelfuse: interrupted", file=sys.stderr)
        return INTERRUPTED
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = _show_warning
            with log_to_stderr(logging.WARNING if getattr(args, "quiet", False) else logging.INFO):
                return int(args.run(args))
    except SolverError as exc:
        print(f"kernelfuse: solver failed: {exc}", file=sys.stderr)
        return 1
    except KernelfuseError as exc:
        print(f"kernelfuse: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:  # scikit-learn's input checks in fit and predict
        print(f"kernelfuse: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file the command reads or writes (the paths it was given)
        where = f"{exc.filename}: " if exc.filename is not None else ""
        print(f"kernelfuse: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelfuse: interrupted", file=sys.stderr)
        return INTERRUPTED
