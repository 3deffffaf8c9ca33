"""Deep ReLU networks (two or more hidden layers) in every file format: read as an ``MLP``, written exactly.

Each file is made by the software that makes it for users (torch, torch.onnx, skl2onnx, keras, flax,
safetensors, numpy), read with ``relusym.io.load`` and checked against that software: the parameters exactly
(the framework's weights read as float64) and the function (``MLP.evaluate_exact`` at rational points against
the framework's own float64 forward pass).  Writing back with ``save(..., like=original)`` is checked by the
framework itself reloading the file and computing bit for bit what the original computes.  The ACAS Xu networks
(tests/data/acasxu) are checked against an independent reading of the NNet text in Fractions.
"""

from __future__ import annotations

import json
import os
import warnings
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

import relusym
import relusym.io as rio
from relusym._deep.mlp import MLP
from relusym.errors import InvalidNetworkError, NNetClampWarning, UnsupportedModelError

os.environ.setdefault("KERAS_BACKEND", "torch")

DATA = Path(__file__).parent / "data" / "acasxu"
ACAS = ["ACASXU_run2a_1_1_batch_2000.nnet", "ACASXU_run2a_2_3_batch_2000.nnet", "ACASXU_run2a_5_9_batch_2000.nnet"]
POINTS = [
    [F(1, 2), F(-3, 4), F(0), F(5, 8), F(-1)],
    [F(-7, 8), F(1, 4), F(3, 2), F(-1, 8), F(1, 3)],
    [F(2), F(0), F(-5, 4), F(3, 8), F(1, 16)],
]


def points(m: int) -> list[list[F]]:
    return [p[:m] + [F(0)] * (m - len(p)) for p in POINTS]


def same_params(net: MLP, weights: list[np.ndarray], biases: list[np.ndarray]) -> None:
    """Exact equality of the MLP's parameters with the framework's (torch orientation), read as float64."""
    assert isinstance(net, MLP)
    assert len(net.weights) == len(weights)
    for W, b, W0, b0 in zip(net.weights, net.biases, weights, biases, strict=True):
        assert np.array_equal(W.astype(np.float64), np.asarray(W0, dtype=np.float64))
        assert np.array_equal(b.astype(np.float64), np.asarray(b0, dtype=np.float64))


def agrees(net: MLP, forward64, m: int) -> None:
    """The exact evaluation against the framework's float64 forward pass on the same rational points."""
    X = points(m)
    got = np.asarray(forward64(np.array([[float(v) for v in x] for x in X], dtype=np.float64)), dtype=np.float64)
    exact = np.array([[float(v) for v in net.evaluate_exact(x)] for x in X])
    np.testing.assert_allclose(got.reshape(exact.shape), exact, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------------------------------------
# torch


@pytest.fixture
def torch_model():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3)).double()


def torch_params(model) -> tuple[list[np.ndarray], list[np.ndarray]]:
    import torch

    lins = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    return [m.weight.detach().double().numpy() for m in lins], [m.bias.detach().double().numpy() for m in lins]


def torch_forward(model):
    import torch

    def fwd(X: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model.double()(torch.from_numpy(X)).numpy()

    return fwd


def test_torch_state_dict_and_checkpoint(torch_model, tmp_path):
    import torch

    sd_path, ckpt_path = tmp_path / "model.pt", tmp_path / "ckpt.pth"
    torch.save(torch_model.state_dict(), sd_path)
    torch.save({"epoch": 7, "model_state_dict": torch_model.state_dict()}, ckpt_path)
    for path in (sd_path, ckpt_path):
        net, info = rio.load_with_info(path)
        assert isinstance(net, MLP) and net.widths == (4, 6, 5, 3)
        assert info.activation == "assumed"
        same_params(net, *torch_params(torch_model))
        agrees(net, torch_forward(torch_model), 4)
        out = tmp_path / f"out_{path.name}"
        assert relusym.save(net, out, like=path).exact
        raw = torch.load(out, weights_only=True)
        if path == ckpt_path:
            assert raw["epoch"] == 7
            raw = raw["model_state_dict"]
        assert list(raw) == list(torch_model.state_dict())
        fresh = torch.nn.Sequential(*[type(m)(*_args(m)) for m in torch_model]).double()
        fresh.load_state_dict(raw)
        X = torch.randn(9, 4, dtype=torch.float64)
        assert torch.equal(fresh(X), torch_model(X))
    # a pruned network keeps the layer names with new shapes
    net = rio.load(sd_path)
    pruned = MLP([net.weights[0][:4], net.weights[1][:, :4], net.weights[2]], [net.biases[0][:4], *net.biases[1:]])
    out = tmp_path / "pruned.pt"
    relusym.save(pruned, out, like=sd_path)
    raw = torch.load(out, weights_only=True)
    assert list(raw) == list(torch_model.state_dict()) and tuple(raw["0.weight"].shape) == (4, 4)
    small = torch.nn.Sequential(
        torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3)
    ).double()
    small.load_state_dict(raw)
    agrees(pruned, torch_forward(small), 4)
    assert rio.load(out).same_parameters(pruned)


def _args(m):
    import torch

    return (m.in_features, m.out_features) if isinstance(m, torch.nn.Linear) else ()


def test_torch_live_modules_torchscript_and_to_torch(torch_model, tmp_path):
    import torch

    nn = torch.nn
    wrapped = nn.Sequential(nn.Flatten(), *list(torch_model)[:2], nn.Dropout(0.1), *list(torch_model)[2:4])
    wrapped.append(nn.Identity())
    wrapped.append(torch_model[4])
    wrapped.eval()
    for module in (torch_model, wrapped):
        net, info = rio.load_with_info(module)
        assert info.activation == "recorded"
        same_params(net, *torch_params(torch_model))
    scripted = tmp_path / "scripted.pt"
    torch.jit.script(torch_model).save(str(scripted))
    same_params(rio.load(scripted), *torch_params(torch_model))
    net = rio.load(torch_model)
    live = relusym.io._torch_format.to_module(net)
    X = torch.randn(5, 4, dtype=torch.float64)
    assert torch.equal(live(X), torch_model(X))
    assert [type(m).__name__ for m in live] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]


def test_safetensors_from_torch(torch_model, tmp_path):
    pytest.importorskip("safetensors")
    import torch
    from safetensors.torch import load_file, save_file

    src = tmp_path / "model.safetensors"
    save_file(torch_model.state_dict(), str(src))
    net = rio.load(src)
    same_params(net, *torch_params(torch_model))
    out = tmp_path / "out.safetensors"
    relusym.save(net, out, like=src)
    fresh = torch.nn.Sequential(*[type(m)(*_args(m)) for m in torch_model]).double()
    fresh.load_state_dict(load_file(str(out)))
    X = torch.randn(6, 4, dtype=torch.float64)
    assert torch.equal(fresh(X), torch_model(X))
    # a Hugging Face-style folder, whole and sharded
    folder = tmp_path / "hf"
    folder.mkdir()
    save_file(torch_model.state_dict(), str(folder / "model.safetensors"))
    same_params(rio.load(folder), *torch_params(torch_model))
    shards = tmp_path / "sharded"
    shards.mkdir()
    sd = torch_model.state_dict()
    keys = list(sd)
    save_file({k: sd[k] for k in keys[:2]}, str(shards / "model-00001-of-00002.safetensors"))
    save_file({k: sd[k] for k in keys[2:]}, str(shards / "model-00002-of-00002.safetensors"))
    weight_map = {k: f"model-0000{1 if i < 2 else 2}-of-00002.safetensors" for i, k in enumerate(keys)}
    (shards / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    same_params(rio.load(shards), *torch_params(torch_model))


def test_npz_and_json(torch_model, tmp_path):
    Ws, bs = torch_params(torch_model)
    plain = tmp_path / "plain.npz"  # scikit-learn/Keras orientation (in×out) under names that do not say it
    np.savez(plain, W1=Ws[0].T, b1=bs[0], W2=Ws[1].T, b2=bs[1], W3=Ws[2].T, b3=bs[2])
    net = rio.load(plain)
    same_params(net, Ws, bs)
    out = tmp_path / "out.npz"
    relusym.save(net, out, like=plain)
    with np.load(out) as z:
        assert sorted(z.files) == ["W1", "W2", "W3", "b1", "b2", "b3"]
        assert np.array_equal(z["W2"], Ws[1].T) and np.array_equal(z["b3"], bs[2])
    named = tmp_path / "named.npz"
    np.savez(named, **{k: v.numpy() for k, v in torch_model.state_dict().items()})
    same_params(rio.load(named), Ws, bs)
    relusym.save(net, tmp_path / "default.npz")
    same_params(rio.load(tmp_path / "default.npz"), Ws, bs)
    # relusym's own JSON: exact rationals, any depth
    exact = MLP([[[1, F(1, 3)], [-2, 0]], [["1/7", 2]], [[3]]], [[0, "-1/2"], [1], [F(2, 5)]])
    path = tmp_path / "deep.json"
    assert relusym.save(exact, path).exact
    assert json.loads(path.read_text())["schema"] == "relusym.mlp/1"
    back = rio.load(path)
    assert isinstance(back, MLP) and back.same_parameters(exact)
    assert back.evaluate_exact([F(1, 2), F(3)]) == exact.evaluate_exact([F(1, 2), F(3)])
    assert rio.load(exact.to_dict()).same_parameters(exact)
    shallow = MLP([[[1, 2]], [[3]]], [[0], [1]])
    assert isinstance(rio.load(shallow.to_dict()), relusym.Network)


# ----------------------------------------------------------------------------------------------------------
# ONNX


def test_onnx_from_torch_export(torch_model, tmp_path):
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    import torch

    model = torch_model.float()
    src = tmp_path / "model.onnx"
    torch.onnx.export(
        model, (torch.zeros(2, 4),), str(src), input_names=["x"], output_names=["y"],
        dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, dynamo=False,
    )  # fmt: skip
    net = rio.load(src)
    same_params(net, *torch_params(model))
    out = tmp_path / "out.onnx"
    assert relusym.save(net, out, like=src).exact
    X = np.random.default_rng(0).standard_normal((7, 4)).astype(np.float32)
    s0, s1 = ort.InferenceSession(str(src)), ort.InferenceSession(str(out))
    assert [i.name for i in s1.get_inputs()] == ["x"] and [o.name for o in s1.get_outputs()] == ["y"]
    assert np.array_equal(s1.run(["y"], {"x": X})[0], s0.run(["y"], {"x": X})[0])
    relusym.save(net, tmp_path / "default.onnx")
    same_params(rio.load(tmp_path / "default.onnx"), *torch_params(model))


def test_sklearn_deep_classifier_and_skl2onnx(tmp_path):
    pytest.importorskip("sklearn")
    ort = pytest.importorskip("onnxruntime")
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.neural_network import MLPClassifier

    from relusym.io._sklearn_format import LogitsOnlyWarning

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 4))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = MLPClassifier(hidden_layer_sizes=(6, 5), max_iter=30, random_state=0).fit(X, y)
    coefs = ([c.T for c in est.coefs_], list(est.intercepts_))
    with pytest.warns(LogitsOnlyWarning):
        net = rio.load(est)
    assert net.widths == (4, 6, 5, 3)
    same_params(net, *coefs)

    def logits(Z: np.ndarray) -> np.ndarray:
        H = Z
        for i, (W, b) in enumerate(zip(est.coefs_, est.intercepts_, strict=True)):
            H = H @ W + b
            if i < len(est.coefs_) - 1:
                H = np.maximum(H, 0)
        return H

    agrees(net, logits, 4)
    onx = skl2onnx.to_onnx(est, X[:1].astype(np.float32), options={"zipmap": False})
    src = tmp_path / "clf.onnx"
    src.write_bytes(onx.SerializeToString())
    with pytest.warns(LogitsOnlyWarning):
        from_onnx = rio.load(src)
    same_params(from_onnx, [W.astype(np.float32) for W in coefs[0]], [b.astype(np.float32) for b in coefs[1]])
    out = tmp_path / "logits.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LogitsOnlyWarning)
        info = relusym.save(from_onnx, out, like=src)
    assert info.exact
    # the classifier head is kept (issue 21): the same outputs, the same labels and probabilities
    sess, orig = ort.InferenceSession(str(out)), ort.InferenceSession(str(src))
    assert [o.name for o in sess.get_outputs()] == [o.name for o in orig.get_outputs()]
    Xf = X[:5].astype(np.float32)
    got, want = sess.run(None, {"X": Xf}), orig.run(None, {"X": Xf})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6)
    # written as a scikit-learn estimator (joblib), read back by scikit-learn
    pkl = tmp_path / "reg.joblib"
    relusym.save(net, pkl)
    import joblib

    reg = joblib.load(pkl)
    assert reg.hidden_layer_sizes == (6, 5)
    np.testing.assert_array_equal(reg.predict(X[:5]), logits(X[:5]))


# ----------------------------------------------------------------------------------------------------------
# Keras


@pytest.fixture
def keras_model():
    keras = pytest.importorskip("keras")
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(6, activation="relu"),
            keras.layers.Dense(5, activation="relu"),
            keras.layers.Dense(3),
        ]
    )


def keras_params(model) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ws = [layer.get_weights() for layer in model.layers]
    return [np.asarray(k).T for k, _ in ws], [np.asarray(b) for _, b in ws]


def test_keras_files_and_live_models(keras_model, tmp_path):
    import keras

    full, weights = tmp_path / "model.keras", tmp_path / "model.weights.h5"
    keras_model.save(full)
    keras_model.save_weights(weights)
    X = np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)
    ref = keras_model.predict(X, verbose=0)
    for src in (full, weights, keras_model):
        net = rio.load(src)
        assert net.widths == (4, 6, 5, 3)
        same_params(net, *keras_params(keras_model))
    net = rio.load(full)
    out = tmp_path / "out.keras"
    assert relusym.save(net, out, like=full).exact
    assert np.array_equal(keras.saving.load_model(out).predict(X, verbose=0), ref)
    out_w = tmp_path / "out.weights.h5"
    relusym.save(net, out_w, like=weights)
    clone = keras.models.clone_model(keras_model)
    clone.load_weights(out_w)
    assert np.array_equal(clone.predict(X, verbose=0), ref)
    live = relusym.io._keras_format.to_model(net)
    assert np.array_equal(live.predict(X, verbose=0), ref)
    pruned = MLP([net.weights[0][:3], net.weights[1][:, :3], net.weights[2]], [net.biases[0][:3], *net.biases[1:]])
    relusym.save(pruned, tmp_path / "pruned.keras", like=full)
    small = keras.saving.load_model(tmp_path / "pruned.keras")
    assert [layer.name for layer in small.layers] == [layer.name for layer in keras_model.layers]
    np.testing.assert_allclose(small.predict(X, verbose=0), pruned.evaluate(X), rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------------------
# Flax


def test_flax_nnx_module_and_msgpack(tmp_path):
    pytest.importorskip("flax")
    import flax.serialization as fs
    import jax
    from flax import nnx

    class Deep(nnx.Module):
        def __init__(self, rngs):
            self.a = nnx.Linear(4, 6, rngs=rngs)
            self.b = nnx.Linear(6, 5, rngs=rngs)
            self.c = nnx.Linear(5, 3, rngs=rngs)

        def __call__(self, x):
            return self.c(nnx.relu(self.b(nnx.relu(self.a(x)))))

    model = Deep(nnx.Rngs(0))
    kernels = [np.asarray(getattr(model, n).kernel.value).T for n in "abc"]
    biases = [np.asarray(getattr(model, n).bias.value) for n in "abc"]
    net = rio.load(model)
    same_params(net, kernels, biases)
    src = tmp_path / "params.msgpack"
    src.write_bytes(fs.to_bytes(nnx.state(model, nnx.Param).to_pure_dict()))
    same_params(rio.load(src), kernels, biases)
    out = tmp_path / "out.msgpack"
    relusym.save(net, out, like=src)
    tree = fs.msgpack_restore(out.read_bytes())
    assert list(tree) == ["a", "b", "c"]
    assert np.array_equal(tree["b"]["kernel"], kernels[1].T)
    live = relusym.io._flax_format.to_nnx(net)
    X = np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32)
    assert np.array_equal(np.asarray(live(X)), np.asarray(jax.jit(lambda x: model(x))(X))) or np.allclose(
        np.asarray(live(X)), np.asarray(model(X)), rtol=1e-6, atol=1e-6
    )
    same_params(rio.load(live), kernels, biases)


# ----------------------------------------------------------------------------------------------------------
# refusals: anything but an alternation of affine layers and ReLU, naming the layer


def test_refusals_name_the_layer(tmp_path):
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Linear(4, 6)
            self.mid = nn.Linear(6, 6)
            self.out = nn.Linear(6, 2)

        def forward(self, x):
            h = torch.relu(self.inp(x))
            return self.out(torch.relu(self.mid(h)) + h)

    cases = [
        (Residual(), "add"),
        (nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 2)), "BatchNorm1d"),
        (nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2)), "Tanh"),
        (nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.Linear(5, 2)), "no ReLU between .*'2' and '3'"),
    ]
    for model, word in cases:
        with pytest.raises(UnsupportedModelError, match=word) as exc:
            rio.load(model.eval())
        assert str(exc.value).count(". ") == 0  # one sentence
    keras = pytest.importorskip("keras")
    tanh = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(6, "relu"), keras.layers.Dense(5, "tanh"), keras.layers.Dense(2)]
    )
    with pytest.raises(UnsupportedModelError, match="tanh"):
        rio.load(tanh)
    pytest.importorskip("onnx")
    src = tmp_path / "tanh.onnx"
    torch.onnx.export(cases[2][0].eval(), (torch.zeros(1, 4),), str(src), dynamo=False)
    with pytest.raises(UnsupportedModelError, match="Tanh"):
        rio.load(src)
    unchained = {"0.weight": np.ones((6, 4)), "2.weight": np.ones((5, 7)), "4.weight": np.ones((2, 5))}
    with pytest.raises(InvalidNetworkError, match="do not chain"):
        rio.load(unchained)
    torch.manual_seed(0)
    deep = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 2))
    sd = tmp_path / "deep.pt"
    torch.save(deep.state_dict(), sd)
    shallow = relusym.Network([[1, 2]], [[1, 0, 0, 0], [0, 1, 0, 0]], [0, 0], [0])
    with pytest.raises(InvalidNetworkError, match="3"):
        relusym.save(shallow, tmp_path / "x.pt", like=sd)  # another number of layers: refused, nothing written
    assert not (tmp_path / "x.pt").exists()


# ----------------------------------------------------------------------------------------------------------
# NNet: the ACAS Xu networks


def nnet_oracle(path: Path) -> dict:
    """An independent reading of an NNet file in Fractions: the first m entries of the minima, maxima, means and
    ranges lines are the inputs', the last mean and range the outputs' (as the NNet readers take them)."""
    rows = [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("//")]

    def vals(line: str) -> list[F]:
        return [F(t) for t in line.split(",") if t.strip()]

    L, m, k, _ = (int(v) for v in vals(rows[0]))
    sizes = [int(v) for v in vals(rows[1])]
    mins, maxs, means, ranges = (vals(r) for r in rows[3:7])
    layers, pos = [], 7
    for ell in range(L):
        n_out = sizes[ell + 1]
        W = [vals(rows[pos + r]) for r in range(n_out)]
        b = [vals(rows[pos + n_out + r])[0] for r in range(n_out)]
        pos += 2 * n_out
        layers.append((W, b))
    assert pos == len(rows)
    return {"m": m, "k": k, "sizes": sizes, "mins": mins[:m], "maxs": maxs[:m], "means": means, "ranges": ranges,
            "layers": layers}  # fmt: skip


def nnet_evaluate(d: dict, x: list[F]) -> list[F]:
    """Normalise the input, ReLU layers, linear output layer, denormalise (inside the box the clamp is the
    identity)."""
    z = [(xi - d["means"][j]) / d["ranges"][j] for j, xi in enumerate(x)]
    for ell, (W, b) in enumerate(d["layers"]):
        z = [sum((w * zj for w, zj in zip(row, z, strict=True)), F(0)) + bi for row, bi in zip(W, b, strict=True)]
        if ell < len(d["layers"]) - 1:
            z = [max(v, F(0)) for v in z]
    return [v * d["ranges"][-1] + d["means"][-1] for v in z]


@pytest.mark.parametrize("name", ACAS)
def test_acasxu_reads_as_a_deep_network_exactly(name):
    path = DATA / name
    with pytest.warns(NNetClampWarning):
        net, info = rio.load_with_info(path)
    assert isinstance(net, MLP)
    assert net.widths == (5, 50, 50, 50, 50, 50, 50, 5)
    assert any("entries beyond the 5 inputs" in n for n in info.notes)
    d = nnet_oracle(path)
    box = rio.input_box(path)
    assert box.lo == tuple(d["mins"]) and box.hi == tuple(d["maxs"])
    for t in (F(0), F(1, 3), F(5, 7), F(1)):
        x = [lo + (hi - lo) * (t if j % 2 else 1 - t) for j, (lo, hi) in enumerate(zip(box.lo, box.hi, strict=True))]
        assert list(net.evaluate_exact(x)) == nnet_evaluate(d, x)


def test_acasxu_written_back_with_its_normalisation(tmp_path):
    src = DATA / ACAS[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NNetClampWarning)
        net = rio.load(src)
        out = tmp_path / "same.nnet"
        assert relusym.save(net, out, like=src).exact
        original = [line for line in src.read_text().splitlines() if not line.startswith("//")]
        written = [line for line in out.read_text().splitlines() if not line.startswith("//")]
        assert written[:7] == original[:7]  # sizes, flag, box and normalisation kept
        assert [[F(v) for v in r.split(",") if v] for r in written[7:]] == [
            [F(v) for v in r.split(",") if v] for r in original[7:]
        ]
        assert out.read_text().startswith(src.read_text().splitlines()[0])  # the licence header kept
        pruned = MLP(
            [net.weights[0][:30], net.weights[1][:, :30], *net.weights[2:]], [net.biases[0][:30], *net.biases[1:]]
        )
        relusym.save(pruned, tmp_path / "pruned.nnet", like=src)
        back = rio.load(tmp_path / "pruned.nnet")
    assert back.widths == (5, 30, 50, 50, 50, 50, 50, 5) and back.same_parameters(pruned)
    d = nnet_oracle(tmp_path / "pruned.nnet")
    x = [F(30000), F(1, 2), F(-1, 2), F(500), F(700)]
    assert list(pruned.evaluate_exact(x)) == nnet_evaluate(d, x)
