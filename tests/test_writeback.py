"""Issue 21: a write-back keeps everything the pruning did not touch, and activations are never assumed silently.

Every model here is built by its own framework (scikit-learn, skl2onnx, torch.onnx, keras, h5py, safetensors),
pruned with ``relusym prune`` (or ``relusym.save(relusym.prune(net), like=...)``) and reloaded by that framework,
which is then compared with the original on real inputs."""

from __future__ import annotations

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
