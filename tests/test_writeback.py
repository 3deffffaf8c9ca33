"""Issue 21: a write-back keeps everything the pruning did not touch, and activations are never assumed silently.

Every model here is built by its own framework (scikit-learn, skl2onnx, torch.onnx, keras, h5py, safetensors),
pruned with ``relusym prune`` (or ``relusym.save(relusym.prune(net), like=...)``) and reloaded by that framework,
which is then compared with the original on real inputs."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import relusym
from relusym.cli import main

os.environ.setdefault("KERAS_BACKEND", "torch")


def prune_cli(src: Path, out: Path, *extra: str, capsys: Any = None) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["prune", str(src), "-o", str(out), *extra])
    if capsys is None:
        return code, "", ""
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ----------------------------------------------------------------------------------------------------------
# scikit-learn: a pruned classifier stays a classifier


def _classifier_with_dead_neuron(n_classes: int, seed: int) -> tuple[Any, np.ndarray]:
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 3))
    y = np.array(["cat", "dog", "eel"])[rng.integers(0, n_classes, 80)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier(hidden_layer_sizes=(5,), max_iter=40, random_state=seed).fit(X, y)
    # a sixth neuron whose outgoing weights are zero: pruning removes it, nothing else changes
    clf.coefs_[0] = np.hstack([clf.coefs_[0], rng.normal(size=(3, 1))])
    clf.intercepts_[0] = np.append(clf.intercepts_[0], 0.5)
    clf.coefs_[1] = np.vstack([clf.coefs_[1], np.zeros((1, clf.coefs_[1].shape[1]))])
    clf.hidden_layer_sizes = (6,)
    return clf, X


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("serializer", ["joblib", "pickle"])
def test_pruned_sklearn_classifier_stays_a_classifier(tmp_path: Path, capsys: Any, n_classes: int, serializer: str):
    import pickle

    import joblib

    clf, X = _classifier_with_dead_neuron(n_classes, seed=n_classes)
    src = tmp_path / f"clf.{'joblib' if serializer == 'joblib' else 'pkl'}"
    out = tmp_path / f"small.{'joblib' if serializer == 'joblib' else 'pkl'}"
    if serializer == "joblib":
        joblib.dump(clf, src)
    else:
        src.write_bytes(pickle.dumps(clf))
    code, text, _ = prune_cli(src, out, "--allow-unsafe-pickle", capsys=capsys)
    assert code == 0, text
    assert "minimal width 5 (from n = 6)" in text and "exactly this network" in text
    small = joblib.load(out) if serializer == "joblib" else pickle.loads(out.read_bytes())  # noqa: S301
    assert type(small).__name__ == "MLPClassifier"
    assert small.hidden_layer_sizes == (5,)
    assert list(small.classes_) == list(clf.classes_)
    assert small.out_activation_ == clf.out_activation_ and small.n_outputs_ == clf.n_outputs_
    np.testing.assert_array_equal(small.predict(X), clf.predict(X))
    np.testing.assert_allclose(small.predict_proba(X), clf.predict_proba(X), rtol=0, atol=1e-12)


def test_sklearn_classifier_like_needs_the_pickle_opt_in(tmp_path: Path):
    import joblib

    clf, X = _classifier_with_dead_neuron(3, seed=7)
    src = tmp_path / "clf.joblib"
    joblib.dump(clf, src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = relusym.load(clf)
    small = relusym.prune(net)
    with pytest.raises(relusym.errors.UnsupportedModelError, match="allow_unsafe_pickle"):
        relusym.io.save(small, tmp_path / "a.joblib", like=src)
    assert not (tmp_path / "a.joblib").exists()
    info = relusym.io.save(small, tmp_path / "b.joblib", like=src, allow_unsafe_pickle=True)
    assert info.exact
    got = joblib.load(tmp_path / "b.joblib")
    np.testing.assert_array_equal(got.predict(X), clf.predict(X))


# ----------------------------------------------------------------------------------------------------------
# ONNX: the head, the names and the input signature are kept


def _session(path: Path) -> Any:
    import onnxruntime as ort

    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _signature(sess: Any) -> tuple[Any, ...]:
    return (
        [(i.name, i.shape, i.type) for i in sess.get_inputs()],
        [(o.name, o.shape, o.type) for o in sess.get_outputs()],
    )


@pytest.mark.parametrize("n_classes", [2, 3])
def test_pruned_skl2onnx_classifier_keeps_label_and_probabilities(tmp_path: Path, capsys: Any, n_classes: int):
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier

    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    y = rng.integers(0, n_classes, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MLPClassifier(hidden_layer_sizes=(5,), max_iter=30, random_state=0).fit(X, y)
    clf.coefs_[1][2, :] = 0  # a neuron with no effect
    src, out = tmp_path / "clf.onnx", tmp_path / "small.onnx"
    src.write_bytes(to_onnx(clf, X[:1], options={"zipmap": False}).SerializeToString())
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0 and "minimal width 4 (from n = 5)" in text, text
    before, after = _session(src), _session(out)
    assert _signature(after) == _signature(before)
    assert [o.name for o in after.get_outputs()] == ["label", "probabilities"]
    want, got = before.run(None, {"X": X}), after.run(None, {"X": X})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)


def _torch_module(softmax: bool) -> Any:
    import torch

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.flat = torch.nn.Flatten()
            self.l1 = torch.nn.Linear(64, 6)
            self.l2 = torch.nn.Linear(6, 3)

        def forward(self, x: Any) -> Any:
            y = self.l2(torch.relu(self.l1(self.flat(x))))
            return torch.softmax(y, -1) if softmax else y

    torch.manual_seed(0)
    m = Net()
    with torch.no_grad():
        m.l2.weight[:, 5] = 0  # the sixth hidden neuron does nothing
    return m


@pytest.mark.parametrize("softmax", [False, True])
@pytest.mark.parametrize("dynamo", [False, True])
def test_pruned_torch_onnx_export_keeps_input_shape_and_head(tmp_path: Path, capsys: Any, softmax: bool, dynamo: bool):
    import torch

    m = _torch_module(softmax)
    src, out = tmp_path / "t.onnx", tmp_path / "small.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            torch.onnx.export(m, (torch.zeros(2, 8, 8),), str(src), dynamo=True, input_names=["pixels"],
                              output_names=["probs"])  # fmt: skip
        else:
            torch.onnx.export(m, (torch.zeros(2, 8, 8),), str(src), dynamo=False, input_names=["pixels"],
                              output_names=["probs"], dynamic_axes={"pixels": {0: "b"}, "probs": {0: "b"}})  # fmt: skip
    capsys.readouterr()
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0 and "minimal width 5 (from n = 6)" in text, text
    before, after = _session(src), _session(out)
    assert _signature(after) == _signature(before)
    assert after.get_inputs()[0].shape[1:] == [8, 8]
    X = np.random.default_rng(1).normal(size=(2, 8, 8)).astype(np.float32)
    want = before.run(None, {"pixels": X})[0]
    got = after.run(None, {"pixels": X})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    if softmax:
        np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-5)


# ----------------------------------------------------------------------------------------------------------
# a Hugging Face-style folder: written back as a folder, its activation read from config.json


def _hf_folder(folder: Path, act: str | None) -> dict[str, np.ndarray]:
    from safetensors.numpy import save_file

    rng = np.random.default_rng(3)
    arrays = {
        "fc1.weight": rng.normal(size=(6, 4)).astype(np.float32),
        "fc1.bias": rng.normal(size=6).astype(np.float32),
        "fc2.weight": rng.normal(size=(2, 6)).astype(np.float32),
        "fc2.bias": rng.normal(size=2).astype(np.float32),
    }
    arrays["fc2.weight"][:, 3] = 0
    folder.mkdir()
    save_file(arrays, str(folder / "model.safetensors"))
    config: dict[str, Any] = {"model_type": "mlp", "input_size": 4, "hidden_size": 6, "num_labels": 2}
    if act is not None:
        config["hidden_act"] = act
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "README.md").write_text("a model card\n")
    return arrays


def test_pruned_model_folder_is_written_as_a_folder(tmp_path: Path, capsys: Any):
    from safetensors.numpy import load_file

    src, out = tmp_path / "model", tmp_path / "small"
    arrays = _hf_folder(src, "relu")
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0 and "minimal width 5 (from n = 6)" in text, text
    assert "no activation is recorded" not in text  # config.json records the ReLU
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "config.json", "model.safetensors"]
    config = json.loads((out / "config.json").read_text())
    assert config["hidden_size"] == 5 and config["hidden_act"] == "relu" and config["input_size"] == 4
    got = load_file(str(out / "model.safetensors"))
    assert got["fc1.weight"].shape == (5, 4) and got["fc2.weight"].shape == (2, 5)
    x = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)

    def run(a: dict[str, np.ndarray]) -> np.ndarray:
        h = np.maximum(x @ a["fc1.weight"].T + a["fc1.bias"], 0)
        return h @ a["fc2.weight"].T + a["fc2.bias"]

    np.testing.assert_allclose(run(got), run(arrays), rtol=1e-6, atol=1e-6)


def test_model_folder_with_another_activation_is_refused(tmp_path: Path):
    src = tmp_path / "model"
    _hf_folder(src, "gelu")
    with pytest.raises(relusym.errors.UnsupportedModelError, match='"hidden_act": "gelu"'):
        relusym.io.load_with_info(src)
    assert main(["canon", str(src)]) == 2


# ----------------------------------------------------------------------------------------------------------
# an assumed activation is said once: a warning in Python, a note in the CLI


def test_weights_only_load_warns_once_and_load_with_info_says_it(tmp_path: Path, capsys: Any):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(0)
    path = tmp_path / "w.safetensors"
    save_file({"0.weight": rng.normal(size=(3, 2)), "0.bias": np.zeros(3), "2.weight": rng.normal(size=(1, 3))},
              str(path))  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        relusym.load(path)
        relusym.io.load(path)
    assumed = [w for w in caught if issubclass(w.category, relusym.io.AssumedActivationWarning)]
    assert len(assumed) == 2 and issubclass(relusym.io.AssumedActivationWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=relusym.io.AssumedActivationWarning)
        relusym.load(path)  # silenceable
        _, info = relusym.io.load_with_info(path)  # does not warn: the info says it
    assert info.activation == "assumed" and any("no activation is recorded" in n for n in info.notes)
    assert "load_with_info" in relusym.io.__all__ and "AssumedActivationWarning" in relusym.io.__all__
    capsys.readouterr()
    assert main(["canon", str(path)]) == 0
    captured = capsys.readouterr()
    assert (captured.out + captured.err).count("no activation is recorded") == 1


# ----------------------------------------------------------------------------------------------------------
# NNet: the file's own rows and normalisation, the real output named, a rounded file never called exact

_NNET = """// a small network
// with one dead neuron
2,2,1,3,
2,3,1,
0,
-10,-10,
10,10,
1.5,-2,0.5,
3,4,2,
0.7,-1.2,
0.3,0.9,
{third}
0.25,
-0.5,
{third_bias}
1.5,{v2},2.5,
0.125,
"""


def test_pruned_nnet_keeps_its_rows_and_normalisation(tmp_path: Path, capsys: Any):
    src, out = tmp_path / "net.nnet", tmp_path / "small.nnet"
    src.write_text(_NNET.format(third="0,0,", third_bias="-1,", v2="-0.75"))
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0 and "minimal width 2 (from n = 3)" in text and "exactly this network" in text, text
    lines = out.read_text().splitlines()
    assert lines[:2] == ["// a small network", "// with one dead neuron"] and "exact decimals" in lines[2]
    assert lines[5:11] == ["0,", "-10,-10,", "10,10,", "1.5,-2,0.5,", "3,4,2,", "0.7,-1.2,"]
    assert lines[11:] == ["0.3,0.9,", "0.25,", "-0.5,", "1.5,-0.75,", "0.125,"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert relusym.equivalent(relusym.load(src), relusym.load(out))


def test_nnet_that_cannot_hold_a_merge_names_the_output_and_rounding_is_not_called_exact(tmp_path: Path, capsys: Any):
    src, out = tmp_path / "dup.nnet", tmp_path / "small.nnet"
    # the second neuron is the first at a third of its scale: their merge has no finite decimal expansion
    rows = ["0.9,1.8,", "0.3,0.6,", "0.5,-1,", "0.9,", "0.3,", "0.25,", "1.5,1,2.5,", "0.125,"]
    src.write_text("\n".join(_NNET.splitlines()[:9] + rows) + "\n")
    code, _, err = prune_cli(src, out, capsys=capsys)
    assert code == 2 and f"cannot write {out}" in err and ".tmp" not in err, err
    assert not out.exists()
    code, text, _ = prune_cli(src, out, "--allow-rounding", capsys=capsys)
    assert code == 0 and "rounded" in text and "exactly this network" not in text, text
    header = out.read_text().splitlines()
    assert not any("exact decimals" in line for line in header) and any("rounded" in line for line in header)


# ----------------------------------------------------------------------------------------------------------
# a merge float32 cannot hold: the largest exact reduction in float32, the full one with --dtype float64


def test_prune_writes_the_largest_exact_reduction_in_the_files_dtype(tmp_path: Path, capsys: Any):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 6.0], [1.0, 1.0], [2.0, 4.0]]))
        model[0].bias.copy_(torch.tensor([0.5, 1.5, 0.0, 1.0]))
        model[2].weight.copy_(torch.tensor([[1.0, 0.1, 0.0, 0.5]]))  # 1 + 3·0.1f is not a float32
        model[2].bias.zero_()
    src, out, wide = tmp_path / "m.pt", tmp_path / "small.pt", tmp_path / "wide.pt"
    torch.save(model.state_dict(), src)
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0, text
    assert "largest exact reduction in float32: width 2" in text and "neurons 0 and 1" in text and "--dtype" in text
    small = torch.load(out, weights_only=True)
    assert small["0.weight"].dtype == torch.float32 and small["0.weight"].shape == (2, 2)
    x = torch.randn(50, 2)
    full = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1))
    full.load_state_dict(small)
    torch.testing.assert_close(full(x), model(x), rtol=1e-6, atol=1e-6)
    code, text, _ = prune_cli(src, wide, "--dtype", "float64", capsys=capsys)
    assert code == 0 and "minimal width 1 (from n = 4)" in text and "exactly this network" in text, text
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        red = relusym.io.exact_reduction(relusym.load(src), np.float32)
    assert red.network.n == 2 and red.unmerged == ((0, 1),) and red.removed == (2, 3)


# ----------------------------------------------------------------------------------------------------------
# Keras bfloat16


def test_keras_bfloat16_is_read_and_pruned_in_bfloat16(tmp_path: Path, capsys: Any):
    import keras

    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(5, activation="relu", dtype="bfloat16"),
            keras.layers.Dense(2, dtype="bfloat16"),
        ]
    )
    w = model.layers[1].get_weights()
    w[0][4, :] = 0
    model.layers[1].set_weights(w)
    src, out = tmp_path / "bf.keras", tmp_path / "small.keras"
    model.save(src)
    net = relusym.load(src)
    assert net.n == 5
    code, text, _ = prune_cli(src, out, capsys=capsys)
    assert code == 0 and "minimal width 4 (from n = 5)" in text and "exactly this network" in text, text
    small = keras.saving.load_model(out)
    assert small.layers[0].units == 4 and small.layers[0].dtype_policy.name == "bfloat16"
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    want = np.asarray(model.predict(x, verbose=0)).astype(np.float32)
    got = np.asarray(small.predict(x, verbose=0)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
