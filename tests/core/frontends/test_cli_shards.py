"""``kernelfuse solve --shards``: rows in shard files solved on a Dask cluster from the command line."""

from __future__ import annotations

import csv
import time

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from helpers import local_dask_cluster
from kernelfuse.frontends.cli import main
from kernelfuse.frontends.persistence import load_model

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def scheduler():
    with local_dask_cluster() as cluster:
        yield cluster.scheduler_address


@pytest.fixture
def shards(tmp_path):
    X, target = load_breast_cancer(return_X_y=True)
    y = np.where(target == 1, 1.0, -1.0)
    for k, rows in enumerate(np.array_split(np.arange(len(y)), 3)):
        np.save(tmp_path / f"X_{k}.npy", X[rows])
        np.save(tmp_path / f"y_{k}.npy", y[rows])
    return tmp_path, X, y


def test_npy_shards_on_a_scheduler_give_a_certified_model_that_predict_reads(scheduler, shards, capsys):
    folder, X, y = shards
    output = folder / "model.npz"
    code = main(["solve", "--shards", str(folder / "X_*.npy"), "--targets", str(folder / "y_*.npy"),
                 "--scheduler", scheduler, "--rank", "30", "--tol", "1e-4", "--output", str(output)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "converged" in printed and "wrote" in printed
    model = load_model(output)
    (fitted,) = model.feature_models_
    assert fitted.status == "converged" and fitted.gap <= 1e-4 and fitted.dual_objective <= fitted.objective
    assert np.mean(model.predict(X) == y) >= 0.95
    np.save(folder / "new.npy", X[:50])
    assert main(["predict", str(output), str(folder / "new.npy"), "--output", str(folder / "p.csv")]) == 0
    with open(folder / "p.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    np.testing.assert_array_equal([float(r["prediction"]) for r in rows], model.predict(X[:50]))
    np.testing.assert_allclose([float(r["score"]) for r in rows], model.decision_function(X[:50]), rtol=1e-9)
    assert main(["predict", str(output), str(folder / "X_0.npy"), "--output", "-"]) == 0
    assert main(["predict", str(output), str(folder / "new.csv"), "--output", "-"]) == 2  # no column names
    assert "records no feature columns" in capsys.readouterr().err
    np.save(folder / "narrow.npy", X[:5, :3])
    assert main(["predict", str(output), str(folder / "narrow.npy"), "--output", "-"]) == 2
    assert "(n, 30)" in capsys.readouterr().err


def test_parquet_shards_with_a_target_column(scheduler, tmp_path, capsys):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X, target = load_breast_cancer(return_X_y=True)
    for k, rows in enumerate(np.array_split(np.arange(len(target)), 2)):
        frame = pd.DataFrame(X[rows], columns=[f"f{j}" for j in range(X.shape[1])])
        frame.assign(label=np.where(target[rows] == 1, 1.0, -1.0)).to_parquet(tmp_path / f"part_{k}.parquet")
    output = tmp_path / "model.npz"
    code = main(["solve", "--shards", str(tmp_path / "*.parquet"), "--targets", "label", "--scheduler", scheduler,
                 "--rank", "20", "--output", str(output), "--quiet"])
    assert code == 0 and capsys.readouterr().out == ""
    model = load_model(output)
    assert model.n_features_in_ == X.shape[1] and model.feature_models_[0].status == "converged"
    pd.DataFrame(X[::-1, ::-1][:20], columns=[f"f{j}" for j in reversed(range(X.shape[1]))]).to_csv(
        tmp_path / "new.csv", index=False)  # the columns by name, in another order
    assert main(["predict", str(output), str(tmp_path / "new.csv"), "--output", str(tmp_path / "p.csv")]) == 0
    predicted = pd.read_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(predicted["score"], model.decision_function(X[::-1][:20]), rtol=1e-9)


def test_pnorm_mkl_shards_give_a_certified_hinge_model(scheduler, shards, capsys):
    folder, X, y = shards
    output = folder / "pnorm.npz"
    code = main(["solve", "--shards", str(folder / "X_*.npy"), "--targets", str(folder / "y_*.npy"),
                 "--scheduler", scheduler, "--family", "pnorm_mkl", "--p", "1.5", "--rank", "20",
                 "--output", str(output)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "distributed Newton on pnorm_mkl (hinge)" in printed and "converged" in printed
    (fitted,) = load_model(output).feature_models_
    assert (fitted.family, fitted.loss, fitted.status) == ("pnorm_mkl", "hinge", "converged")
    assert np.mean(load_model(output).predict(X) == y) >= 0.95


@pytest.mark.parametrize("extra, message", [
    (["--shards", "{folder}/none_*.npy", "--targets", "{folder}/y_*.npy"], "--shards .* no file matches"),
    (["--shards", "{folder}/X_*.npy", "--targets", "{folder}/y_0.npy"], "--targets .* 1 files for 3 shards"),
    (["--shards", "{folder}/X_*.npy"], "--targets: give"),
    (["{folder}/problem.npz", "--shards", "{folder}/X_*.npy", "--targets", "{folder}/y_*.npy"],
     "PROBLEM.npz is not taken with --shards"),
    (["--shards", "{folder}/X_*.npy", "--targets", "{folder}/y_*.npy", "--family", "vskl"], "--family vskl"),
    (["--shards", "{folder}/X_*.npy", "--targets", "{folder}/y_*.npy", "--family", "pnorm_mkl", "--loss", "logistic"],
     "--loss logistic: --family pnorm_mkl"),
    (["{folder}/problem.npz", "--solver", "spicymkl", "--scheduler", "tcp://127.0.0.1:9"],
     "--scheduler goes with --shards"),
    ([], "give PROBLEM.npz, or --shards"),
])
def test_bad_shard_arguments_exit_2_naming_the_argument(shards, capsys, extra, message):
    folder, _, _ = shards
    args = [a.format(folder=folder) for a in extra]
    assert main(["solve", *args, "--output", str(folder / "out.npz")]) == 2
    assert pytest.importorskip("re").search(message, capsys.readouterr().err)
    assert not (folder / "out.npz").exists()


def test_an_unreachable_scheduler_exits_2_within_seconds(shards, capsys):
    folder, _, _ = shards
    start = time.perf_counter()
    code = main(["solve", "--shards", str(folder / "X_*.npy"), "--targets", str(folder / "y_*.npy"),
                 "--scheduler", "tcp://127.0.0.1:9", "--output", str(folder / "out.npz")])
    assert code == 2 and "no Dask scheduler answered at tcp://127.0.0.1:9" in capsys.readouterr().err
    assert time.perf_counter() - start < 60.0
