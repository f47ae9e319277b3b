"""`kernelfuse fit CONFIG.toml` and `kernelfuse predict`: errors name the offending key or column."""

from __future__ import annotations

import numpy as np
import pytest

from kernelfuse.frontends.cli import main

CONFIG = """
[data]
train = "train.csv"
target = "y"
{data_extra}
[kernels]
{kernels}
[model]
C = 0.1
standardize = true
{model_extra}
"""


@pytest.fixture
def workdir(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] - X[:, 2] > 0, "yes", "no")
    lines = ["a,b,c,y"] + [f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{t}" for r, t in zip(X, y)]
    (tmp_path / "train.csv").write_text("\n".join(lines) + "\n")
    return tmp_path


def write(workdir, kernels="grid = true\nwidths = [1.0]\ndegrees = [1]", data_extra="", model_extra=""):
    path = workdir / "config.toml"
    path.write_text(CONFIG.format(kernels=kernels, data_extra=data_extra, model_extra=model_extra))
    return str(path)


def test_fit_and_predict_round_trip(workdir):
    config = write(workdir, kernels='[[kernels.spec]]\nkernel = "gaussian"\nparams = { width = 1.5 }\n'
                                     'features = ["a", "c"]\n[[kernels.spec]]\nkernel = "linear"\n')
    assert main(["fit", config, "--quiet"]) == 0
    (workdir / "new.csv").write_text("c,a,b\n1.0,-1.0,0.0\n-1.0,1.0,0.0\n")  # any column order
    assert main(["predict", str(workdir / "model.npz"), str(workdir / "new.csv"),
                 "--output", str(workdir / "p.csv")]) == 0
    rows = (workdir / "p.csv").read_text().splitlines()
    assert rows[0] == "prediction,score"
    assert [r.split(",")[0] for r in rows[1:]] == ["no", "yes"]


def test_check_psd_from_a_config(workdir):
    config = write(workdir, model_extra="check_psd = true")
    assert main(["fit", config, "--quiet"]) == 0


def test_a_regression_model_from_a_config(workdir):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = np.sin(X[:, 0]) + 0.5 * X[:, 2]
    lines = ["a,b,c,y"] + [f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{t:.6f}" for r, t in zip(X, y)]
    (workdir / "train.csv").write_text("\n".join(lines) + "\n")
    config = write(workdir, model_extra='estimator = "MKLRegressor"')
    assert main(["fit", config, "--quiet"]) == 0
    (workdir / "new.csv").write_text("a,b,c\n1.0,0.0,1.0\n-1.0,0.0,-1.0\n")
    assert main(["predict", str(workdir / "model.npz"), str(workdir / "new.csv"),
                 "--output", str(workdir / "p.csv")]) == 0
    rows = (workdir / "p.csv").read_text().splitlines()
    assert rows[0] == "prediction"
    first, second = (float(r) for r in rows[1:])
    assert first > 0.5 and second < -0.5  # sin(1) + 0.5 = 1.34, its negative


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"model_extra": "stadardize = false"}, "unknown key in \\[model\\].*'stadardize'.*did you mean 'standardize'"),
        ({"data_extra": 'features = ["a", "d"]'}, "unknown column of .*'d'"),
        ({"kernels": '[[kernels.spec]]\nkernel = "gausian"'}, "did you mean 'gaussian'"),
        ({"kernels": '[[kernels.spec]]\nkernel = "gaussian"\nfeatures = ["z"]'}, "unknown feature .* 'z'"),
        ({"kernels": '[[kernels.spec]]\nkernel = "gaussian"\nparams = { sigma = 1.0 }'}, "spec\\]\\] number 1"),
        ({"kernels": '[[kernels.spec]]\nwidth = 1.0'}, "unknown key in \\[\\[kernels.spec\\]\\] number 1"),
        ({"model_extra": "q = 0.5\nfamily = \"vskl\""}, "q must be >= 1"),
        ({"model_extra": 'estimator = "MKLRegresor"'}, "unknown \\[model\\] estimator.*did you mean 'MKLRegressor'"),
        ({"model_extra": 'check_psd = "maybe"'}, "check_psd must be 'auto'.*got 'maybe'"),
    ],
)
def test_errors_name_the_offending_key_or_column(workdir, capsys, kwargs, message):
    assert main(["fit", write(workdir, **kwargs), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert __import__("re").search(message, err), err


def test_bad_files(workdir, capsys):
    (workdir / "bad.toml").write_text("[data\n")
    assert main(["fit", str(workdir / "bad.toml")]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    (workdir / "train.csv").write_text("a,b,c,y\n1,2,3,yes\n1,x,3,no\n")
    assert main(["fit", write(workdir), "--quiet"]) == 2
    assert "line 3, column 'b': 'x' is not a number" in capsys.readouterr().err
    (workdir / "train.csv").write_text("a,b,c\n1,2,3\n4,5,6\n")
    assert main(["fit", write(workdir), "--quiet"]) == 2
    assert "no target column 'y'" in capsys.readouterr().err
    assert main(["predict", str(workdir / "none.npz"), str(workdir / "train.csv"),
                 "--output", str(workdir / "p.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_a_solver_composed_in_the_config(workdir, capsys):
    """[solver]: role = registered name; the composition is mirror-vskl's, named nowhere."""
    config = write(workdir, model_extra='family = "l1_mkl_sq"\n\n[solver]\noptimizer = "mirror-descent"\n'
                                       '"optimizer.mirror_map" = "entropic"\noracle = "vskl-bca"\n'
                                       '"oracle.svm_solver" = "osqp"\nparams = { tol = 1e-5 }\n')
    assert main(["fit", config, "--output", str(workdir / "m.npz"), "--quiet"]) == 0
    assert (workdir / "m.npz").exists()
    bad = write(workdir, model_extra='[solver]\noptimizer = "mirror-descnt"\noracle = "vskl-bca"\n')
    assert main(["fit", bad, "--quiet"]) != 0
    assert "mirror-descent" in capsys.readouterr().err  # the close match is named


def test_compose_builds_what_a_named_recipe_builds():
    from kernelfuse import get_registry, solve
    from kernelfuse.assembly.composition import compose
    from kernelfuse.errors import UnknownNameError

    recipe = compose({"optimizer": "mirror-descent", "optimizer.mirror_map": "local-quadratic",
                      "oracle": "vskl-bca", "oracle.svm_solver": "active-set"})
    assert recipe.parts == get_registry().get("recipe", "mirror-vskl").factory.parts
    assert recipe.families == {"vskl", "l1_mkl_sq"}
    rng = np.random.default_rng(1)
    X = rng.normal(size=(30, 2))
    K = np.stack([np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / w) for w in (0.5, 2.0)])
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    composed = solve(K, y, solver=recipe.build(), family="l1_mkl_sq", C=1.0)
    named = solve(K, y, solver="mirror-vskl", family="l1_mkl_sq", C=1.0)
    assert composed.objective == named.objective
    with pytest.raises(UnknownNameError, match="role"):
        compose({"optimiser": "mirror-descent", "oracle": "vskl-bca"})
    with pytest.raises(UnknownNameError, match="label-svms"):
        compose({"optimizer": "mirror-descent", "oracle": "label-svm"})
    explicit = compose({"optimizer": "optimizer:mirror-descent", "oracle": "oracle:label-svms"})
    assert explicit.families == {"mlmkl_sum", "mlmkl_max"}


def test_views_by_feature_column_names_from_a_config(workdir):
    from kernelfuse.frontends.persistence import load_model

    config = write(workdir, kernels="", model_extra='views = { first = ["a", "b"], last = ["c"] }')
    assert main(["fit", config, "--quiet"]) == 0
    model = load_model(workdir / "model.npz")
    assert model.view_names_ == ["first", "last"] and model.view_weights_.sum() == pytest.approx(1.0)
    assert {spec.features for spec in model.kernels_} == {(0, 1), (2,)}
    (workdir / "new.csv").write_text("c,a,b\n1.0,-1.0,0.0\n-1.0,1.0,0.0\n")
    assert main(["predict", str(workdir / "model.npz"), str(workdir / "new.csv"),
                 "--output", str(workdir / "p.csv")]) == 0


@pytest.mark.parametrize("views, message", [('{ first = ["a", "zz"] }', "zz"),
                                             ('{ first = [] }', "non-empty array"),
                                             ('{ first = "a" }', "non-empty array")])
def test_bad_views_in_a_config_name_the_key(workdir, capsys, views, message):
    config = write(workdir, kernels="", model_extra=f"views = {views}")
    assert main(["fit", config, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "views.first" in err and message in err
