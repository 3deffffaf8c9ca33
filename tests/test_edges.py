"""Nothing lost at the edges: every writer exact or refusing, files made by other software read as data with the
same function out, honest provenance (activation recorded or assumed), and the API conveniences.

Every foreign file here is made by the client itself (torch, safetensors, skl2onnx, keras, flax, numpy); the
oracle is the network built by hand from the same arrays (its normal form, or exact parameter equality)."""

from __future__ import annotations

import json
import warnings
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym import Network, normal_form
from relusym.errors import InvalidNetworkError, NotRepresentableError, UnsupportedModelError
from relusym.io import load_with_info, save

# ---------------------------------------------------------------------------------------------------------
# helpers


def dyadic_net(dtype: str = "float64") -> Network:
    """Entries that every float type holds (small dyadic rationals), with two parallel neurons so that pruning
    merges them: the pruned network is narrower and still exact in every dtype."""
    V = [[1.0, 0.5, -2.0]]
    A = [[1.0, -0.5], [2.0, -1.0], [0.25, 1.0]]  # rows 0 and 1 are parallel: one hyperplane class
    b = [0.5, 1.0, -0.75]
    c = [0.125]
    hold = "float32" if dtype == "bfloat16" else dtype
    return Network(*(np.array(x, dtype=hold) for x in (V, A, b, c)))


# a value that the dtype does not hold exactly, but the next wider type does (Fraction 1/3 for float64)
NOT_FITTING = {
    "float16": 1 + 2.0**-11,
    "bfloat16": 1 + 2.0**-9,
    "float32": 1 + 2.0**-30,
    "float64": F(1, 3),
}


def with_entry(net: Network, value: object) -> Network:
    A = [[F(x) for x in row] for row in net.A.tolist()]
    A[2][1] = F(value)  # type: ignore[arg-type]
    return Network(net.V.tolist(), A, net.b.tolist(), net.c.tolist())


WRITERS = [".npz", ".safetensors", ".pt", ".onnx", ".msgpack", ".keras", ".weights.h5", ".joblib"]
DTYPES = ["float16", "bfloat16", "float32", "float64"]
# combinations a format cannot hold at all (refused with UnsupportedModelError/InvalidNetworkError, never rounded)
# Keras writes bfloat16 since issue 21 (read back as bfloat16 values); these formats have no such float type
NO_SUCH_TYPE = {(".joblib", "float16"), (".joblib", "bfloat16")}
NO_SUCH_TYPE |= {(".npz", "bfloat16")}


def reader_of(path: Path) -> Network:
    if path.suffix == ".joblib":
        from relusym.io._sklearn_format import read_back

        return read_back(path)
    return relusym.load(path)


# ---------------------------------------------------------------------------------------------------------
# 1. the rounding policy: the whole matrix


@pytest.mark.parametrize("suffix", WRITERS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_write_is_exact_or_refused(tmp_path, suffix, dtype):
    net = dyadic_net()
    path = tmp_path / f"net{suffix}"
    if (suffix, dtype) in NO_SUCH_TYPE:
        with pytest.raises((UnsupportedModelError, InvalidNetworkError)):
            save(net, path, dtype=dtype)
        assert not path.exists() and not list(tmp_path.iterdir())
        return
    info = save(net, path, dtype=dtype)
    assert info.exact and info.rounded == () and info.distance is None
    back = reader_of(path)
    assert back.same_parameters(net)  # exactly the network given, read back by relusym's own reader
    # not representable: refused, nothing written, the message names the entry
    bad = with_entry(net, NOT_FITTING[dtype])
    target = tmp_path / f"bad{suffix}"
    with pytest.raises(NotRepresentableError, match=r"A\[2, 1\] = .* is not exactly representable in " + dtype):
        save(bad, target, dtype=dtype)
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left behind
    # rounding only when asked, and then the distance is reported
    info = save(bad, target, dtype=dtype, allow_rounding=True)
    assert not info.exact and info.rounded == ("A",) and info.distance is not None and info.max_change > 0
    rounded = reader_of(target)
    assert not rounded.same_parameters(bad)
    assert info.max_change == pytest.approx(float(abs(F(float(rounded.A[2, 1])) - F(bad.A[2, 1]))), rel=1e-12)


def test_bf16_like_file_is_checked_against_bf16_not_its_widened_float32(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).to(torch.bfloat16)
    like = tmp_path / "model_bf16.pt"
    torch.save(model.state_dict(), like)
    net = relusym.load(like)
    assert net.A.dtype == np.float32  # widened on read (exact)
    nudged = with_entry(Network(*(x.astype(np.float64) for x in (net.V, net.A, net.b, net.c))), 1 + 2.0**-9)
    with pytest.raises(NotRepresentableError, match="bfloat16"):
        save(nudged, tmp_path / "out.pt", like=like)
    assert not (tmp_path / "out.pt").exists()
    # widening keeps it exact in the same format
    info = save(nudged, tmp_path / "out.pt", like=like, dtype="float64")
    assert info.exact
    sd = torch.load(tmp_path / "out.pt", weights_only=True)
    assert all(t.dtype == torch.float64 for t in sd.values())
    # the original's own network goes back as bfloat16, bit for bit
    save(net, tmp_path / "same.pt", like=like)
    sd = torch.load(tmp_path / "same.pt", weights_only=True)
    ref = model.state_dict()
    assert all(sd[k].dtype == torch.bfloat16 and torch.equal(sd[k], ref[k]) for k in ref)


def test_readme_workflow_prune_save_like_is_exact(tmp_path):
    """relusym.save(relusym.prune(net), "small.pt", like="model.pt") is exact on a float network."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    with torch.no_grad():
        model[0].weight[1] = 2 * model[0].weight[0]  # neurons 0 and 1 share a hyperplane: prunable
        model[0].bias[1] = 2 * model[0].bias[0]
        model[2].weight[:, :2] = torch.tensor([[0.5, 0.25], [-1.0, 0.125]])  # merged weights stay float32
    torch.save(model.state_dict(), tmp_path / "model.pt")
    net = relusym.load(tmp_path / "model.pt")
    small = relusym.prune(net)
    assert small.n == 3 and small.is_float and small.A.dtype == np.float32
    info = relusym.save(small, tmp_path / "small.pt", like=tmp_path / "model.pt")
    assert info.exact
    back = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    back.load_state_dict(torch.load(tmp_path / "small.pt", weights_only=True))
    x = torch.randn(64, 3)
    assert torch.allclose(back(x), model(x), rtol=1e-5, atol=1e-6)
    assert normal_form(relusym.load(back)) == normal_form(net)
    # the canonical rational network stays available by name
    cmn = relusym.prune(net, canonical=True)
    assert normal_form(cmn) == normal_form(net) and cmn.n == 3


def test_checkpoint_dict_keeps_its_other_entries(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 2)).sum().backward()
    opt.step()  # the checkpoint now holds optimizer moments shaped like the weights
    with torch.no_grad():
        model[0].weight[2] = model[0].weight[0]
        model[0].bias[2] = model[0].bias[0]
        model[2].weight[0, 0], model[2].weight[0, 2] = 0.5, 0.25
    ckpt = {"epoch": 7, "config": {"hidden": 3}, "version": "1.2", "model_state_dict": model.state_dict()}
    ckpt["optimizer_state_dict"] = opt.state_dict()
    torch.save(ckpt, tmp_path / "ckpt.pt")
    small = relusym.prune(relusym.load(tmp_path / "ckpt.pt"))
    assert small.n == 2
    info = relusym.save(small, tmp_path / "small.pt", like=tmp_path / "ckpt.pt")
    out = torch.load(tmp_path / "small.pt", weights_only=True)
    assert out["epoch"] == 7 and out["config"] == {"hidden": 3} and out["version"] == "1.2"
    assert "optimizer_state_dict" not in out
    assert any("optimizer_state_dict" in n for n in info.notes)
    assert relusym.load(tmp_path / "small.pt").same_parameters(small)


# ---------------------------------------------------------------------------------------------------------
# 2. files other software writes


def _mlp_data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    return X, X @ np.array([1.0, -2.0, 0.5])


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_skl2onnx_files_read_as_the_estimator(tmp_path, kind, dtype):
    pytest.importorskip("skl2onnx")
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    X, y = _mlp_data()
    if kind == "regressor":
        est, target = MLPRegressor(hidden_layer_sizes=(4,), max_iter=30, random_state=0), y
    else:
        est = MLPClassifier(hidden_layer_sizes=(4,), max_iter=30, random_state=0)
        target = (y > 0).astype(int) if kind == "binary" else np.digitize(y, [-1.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, target)
        model = to_onnx(est, X[:1].astype(dtype))
    path = tmp_path / "mlp.onnx"
    path.write_bytes(model.SerializeToString())
    if kind == "regressor":
        net, info = load_with_info(path)
    else:
        with pytest.warns(UserWarning, match="logits"):
            net, info = load_with_info(path)
        assert any("logits" in n for n in info.notes)
    assert info.activation == "recorded"
    coefs = [
        np.asarray(a, dtype=dtype) for a in (est.coefs_[1].T, est.coefs_[0].T, est.intercepts_[0], est.intercepts_[1])
    ]
    assert net.same_parameters(Network(*coefs))  # the arrays skl2onnx wrote, exactly
    assert normal_form(net) == normal_form(Network(*coefs))


@pytest.mark.slow
def test_torch_onnx_exports_with_flatten(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")

    class Net(torch.nn.Module):
        def __init__(self, how: str) -> None:
            super().__init__()
            self.how = how
            self.flat = torch.nn.Flatten()
            self.l1 = torch.nn.Linear(6, 4)
            self.l2 = torch.nn.Linear(4, 2)

        def forward(self, x):
            x = self.flat(x) if self.how == "flatten" else x.view(x.size(0), -1)
            return self.l2(torch.relu(self.l1(x)))

    for how in ("flatten", "view"):
        mod = Net(how)
        ref = Network(
            mod.l2.weight.detach().numpy(),
            mod.l1.weight.detach().numpy(),
            mod.l1.bias.detach().numpy(),
            mod.l2.bias.detach().numpy(),
        )
        assert relusym.load(mod).same_parameters(ref)
        path = tmp_path / f"{how}_legacy.onnx"
        torch.onnx.export(
            mod,
            (torch.zeros(2, 2, 3),),
            str(path),
            dynamo=False,
            dynamic_axes={"input": {0: "b"}},
            input_names=["input"],
        )
        assert relusym.load(path).same_parameters(ref), how
        try:
            path = tmp_path / f"{how}_dynamo.onnx"
            torch.onnx.export(mod, (torch.zeros(2, 2, 3),), str(path), dynamo=True)
        except Exception as exc:  # pragma: no cover - onnxscript missing
            pytest.skip(f"the dynamo exporter is not usable here: {exc}")
        assert relusym.load(path).same_parameters(ref), how


def test_onnx_narrowing_cast_is_refused(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    W1 = numpy_helper.from_array(np.ones((2, 3), np.float32), "W1")
    W2 = numpy_helper.from_array(np.ones((3, 1), np.float32), "W2")
    nodes = [
        helper.make_node("Cast", ["x"], ["xc"], to=TensorProto.FLOAT),
        helper.make_node("MatMul", ["xc", "W1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("MatMul", ["r", "W2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["b", 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["b", 1])],
        initializer=[W1, W2],
    )
    path = tmp_path / "narrow.onnx"
    onnx.save(helper.make_model(graph), str(path))
    with pytest.raises(UnsupportedModelError, match="casts float64 to float32"):
        relusym.load(path)


def test_keras_files_read_and_written_back(tmp_path):
    keras = pytest.importorskip("keras")
    pytest.importorskip("h5py")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    K1, b1 = (np.asarray(w) for w in model.layers[0].get_weights())
    K2, b2 = (np.asarray(w) for w in model.layers[1].get_weights())
    ref = Network(K2.T, K1.T, b1, b2)
    model.save(tmp_path / "m.keras")
    model.save_weights(tmp_path / "m.weights.h5")
    x = np.random.default_rng(1).standard_normal((16, 3)).astype(np.float32)
    for name, activation in (("m.keras", "recorded"), ("m.weights.h5", "assumed")):
        net, info = load_with_info(tmp_path / name)
        assert net.same_parameters(ref) and info.activation == activation
        small = relusym.prune(net)
        out = tmp_path / f"small_{name}"
        assert relusym.save(small, out, like=tmp_path / name).exact
        if name.endswith(".keras"):
            back = keras.saving.load_model(out)
        else:
            back = keras.Sequential(
                [keras.Input((3,)), keras.layers.Dense(small.n, activation="relu"), keras.layers.Dense(2)]
            )
            back.load_weights(out)
        np.testing.assert_allclose(np.asarray(back(x).detach()), np.asarray(model(x).detach()), rtol=1e-5, atol=1e-6)
        assert relusym.load(back).same_parameters(small)
    # a non-ReLU config is refused naming the layer; an output softmax is read as logits
    tanh = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh", name="hid"), keras.layers.Dense(2)]
    )
    tanh.save(tmp_path / "tanh.keras")
    with pytest.raises(UnsupportedModelError, match="layer 'hid' applies activation 'tanh'"):
        relusym.load(tmp_path / "tanh.keras")


def test_keras_onnx_export(tmp_path):
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"), keras.layers.Dense(2)])
    K1, b1 = (np.asarray(w) for w in model.layers[0].get_weights())
    K2, b2 = (np.asarray(w) for w in model.layers[1].get_weights())
    model(np.zeros((1, 3), dtype=np.float32))  # keras exports only a model that has been called
    path = tmp_path / "k.onnx"
    try:
        model.export(str(path), format="onnx")
    except Exception as exc:  # pragma: no cover - depends on the backend's exporter
        pytest.skip(f"keras cannot export ONNX with this backend: {str(exc)[:100]}")
    assert relusym.load(path).same_parameters(Network(K2.T, K1.T, b1, b2))


def test_torchscript_parameters_read_as_data(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.jit.save(torch.jit.trace(model, torch.zeros(1, 3)), tmp_path / "ts.pt")
    net, info = load_with_info(tmp_path / "ts.pt")
    assert net.same_parameters(relusym.load(model)) and info.activation == "recorded"
    assert any("TorchScript" in n for n in info.notes)
    tanh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    torch.jit.save(torch.jit.trace(tanh, torch.zeros(1, 3)), tmp_path / "tanh.pt")
    with pytest.raises(UnsupportedModelError, match="Tanh"):
        relusym.load(tmp_path / "tanh.pt")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_state_dicts_and_safetensors_round_trip(tmp_path, dtype):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    tdt = getattr(torch, dtype)
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).to(tdt)
    with torch.no_grad():
        model[0].weight[2] = model[0].weight[0] * 2
        model[0].bias[2] = model[0].bias[0] * 2
        model[2].weight[0, 0], model[2].weight[0, 2] = 0.5, 0.25  # the merged weight 0.5 + 2·0.25 fits
    sd = model.state_dict()
    ref = Network(*(sd[k].float().numpy() for k in ("2.weight", "0.weight", "0.bias", "2.bias")))
    torch.save(sd, tmp_path / "m.pt")
    st.save_file(sd, str(tmp_path / "m.safetensors"))
    for name in ("m.pt", "m.safetensors"):
        net, info = load_with_info(tmp_path / name)
        assert net.same_parameters(ref) and info.activation == "assumed"
        small = relusym.prune(net)
        out = tmp_path / f"small_{name}"
        assert relusym.save(small, out, like=tmp_path / name).exact
        back = torch.load(out, weights_only=True) if name.endswith(".pt") else st.load_file(str(out))
        assert all(t.dtype == tdt for t in back.values())
        pruned = torch.nn.Sequential(torch.nn.Linear(2, small.n), torch.nn.ReLU(), torch.nn.Linear(small.n, 1)).to(tdt)
        pruned.load_state_dict(back)
        x = torch.randn(32, 2).to(tdt)
        # same function: compare in float64 from the exact weights (half-precision arithmetic itself rounds)
        assert normal_form(relusym.load(pruned)) == normal_form(net)
        assert np.allclose(pruned.double()(x.double()).detach().numpy(), model.double()(x.double()).detach().numpy())


def test_flax_nnx_with_tanh_is_refused_and_relu_accepted():
    pytest.importorskip("flax")
    import jax.numpy as jnp
    from flax import nnx

    class Tanh(nnx.Module):
        def __init__(self, rngs):
            self.l1 = nnx.Linear(3, 4, rngs=rngs)
            self.l2 = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            return self.l2(jnp.tanh(self.l1(x)))

    class Relu(Tanh):
        def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))

    with pytest.raises(UnsupportedModelError, match="'tanh'"):
        relusym.load(Tanh(nnx.Rngs(0)))
    mod = Relu(nnx.Rngs(0))
    net, info = load_with_info(mod)
    assert info.activation == "recorded"
    ref = Network(
        np.asarray(mod.l2.kernel.value).T,
        np.asarray(mod.l1.kernel.value).T,
        np.asarray(mod.l1.bias.value),
        np.asarray(mod.l2.bias.value),
    )
    assert net.same_parameters(ref)
    # a flat dict as Git Re-Basin's flatten_params writes it
    flat = {"Dense_0/kernel": ref.A.T, "Dense_0/bias": ref.b, "Dense_1/kernel": ref.V.T, "Dense_1/bias": ref.c}
    net, info = load_with_info(flat)
    assert net.same_parameters(ref) and info.activation == "assumed"


def test_numpy_files_with_usual_names(tmp_path):
    rng = np.random.default_rng(2)
    A, b = rng.standard_normal((4, 3)), rng.standard_normal(4)
    V, c = rng.standard_normal((2, 4)), rng.standard_normal(2)
    ref = Network(V, A, b, c)
    cases = {
        "w.npz": {"W1": A.T, "b1": b, "W2": V.T, "b2": c},  # in×out (Keras/sklearn style), found from shapes
        "t.npz": {"fc1.weight": A, "fc1.bias": b, "fc2.weight": V, "fc2.bias": c},
        "k.npz": {"dense/kernel": A.T, "dense/bias": b, "dense_1/kernel": V.T, "dense_1/bias": c},
        "o.npz": {"W1": A, "b1": b, "W2": V, "b2": c},  # out×in, found from shapes
    }
    for name, arrays in cases.items():
        np.savez(tmp_path / name, **arrays)
        net, info = load_with_info(tmp_path / name)
        assert net.same_parameters(ref), name
        assert info.activation == "assumed" and info.notes
        assert relusym.load(arrays).same_parameters(ref)  # the same dict in memory
        # written back under the same names, exactly
        out = tmp_path / f"out_{name}"
        assert save(net, out, like=tmp_path / name).exact
        with np.load(out) as data:
            assert sorted(data.files) == sorted(arrays)
    # relusym's own V/A/b/c layout records the activation (it is relusym's format)
    np.savez(tmp_path / "own.npz", V=V, A=A, b=b, c=c)
    assert load_with_info(tmp_path / "own.npz")[1].activation == "recorded"
    # square weights: both orientations fit, so the reader asks
    S = rng.standard_normal((3, 3))
    np.savez(tmp_path / "sq.npz", W1=S, b1=b[:3], W2=S, b2=b[:3])
    with pytest.raises(InvalidNetworkError, match="layout='out_in' or layout='in_out'"):
        relusym.load(tmp_path / "sq.npz")
    assert relusym.load(tmp_path / "sq.npz", layout="in_out").same_parameters(Network(S.T, S.T, b[:3], b[:3]))
    # an object .npy needs pickle
    np.save(tmp_path / "d.npy", {"W1": A.T, "b1": b, "W2": V.T, "b2": c}, allow_pickle=True)
    with pytest.raises(UnsupportedModelError, match="unpickling"):
        relusym.load(tmp_path / "d.npy")
    with pytest.warns(RuntimeWarning, match="runs any code"):
        assert relusym.load(tmp_path / "d.npy", allow_unsafe_pickle=True).same_parameters(ref)


def test_hugging_face_style_folders(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    ref = relusym.load(model)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    single = tmp_path / "single"
    single.mkdir()
    st.save_file(sd, str(single / "model.safetensors"))
    (single / "config.json").write_text("{}")
    assert relusym.load(single).same_parameters(ref)
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    st.save_file({k: sd[k] for k in ("0.weight", "0.bias")}, str(sharded / "model-00001-of-00002.safetensors"))
    st.save_file({k: sd[k] for k in ("2.weight", "2.bias")}, str(sharded / "model-00002-of-00002.safetensors"))
    index = {
        "weight_map": {
            "0.weight": "model-00001-of-00002.safetensors",
            "0.bias": "model-00001-of-00002.safetensors",
            "2.weight": "model-00002-of-00002.safetensors",
            "2.bias": "model-00002-of-00002.safetensors",
        }
    }
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    assert relusym.load(sharded).same_parameters(ref)
    binary = tmp_path / "bin"
    binary.mkdir()
    torch.save(sd, binary / "pytorch_model.bin")
    net, info = load_with_info(binary)
    assert net.same_parameters(ref) and info.activation == "assumed"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UnsupportedModelError, match="model.safetensors"):
        relusym.load(empty)
    orbax = tmp_path / "ckpt"
    orbax.mkdir()
    (orbax / "_CHECKPOINT_METADATA").write_text("{}")
    with pytest.raises(UnsupportedModelError, match="orbax checkpoint.*flax.serialization.to_bytes"):
        relusym.load(orbax)


def test_sklearn_written_with_the_serializer_it_was_read_with(tmp_path):
    import pickle

    joblib = pytest.importorskip("joblib")
    from sklearn.neural_network import MLPRegressor

    from relusym.io._sklearn_format import serializer_of

    X, y = _mlp_data()
    est = MLPRegressor(hidden_layer_sizes=(3,), max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    joblib.dump(est, tmp_path / "m.joblib")
    with open(tmp_path / "m.pkl", "wb") as fh:
        pickle.dump(est, fh)
    for name, kind in (("m.joblib", "joblib"), ("m.pkl", "pickle")):
        assert serializer_of(tmp_path / name) == kind
        with pytest.warns(RuntimeWarning):
            net = relusym.io.load(tmp_path / name, allow_unsafe_pickle=True)
        out = tmp_path / f"out_{name}"
        assert save(net, out, like=tmp_path / name).exact
        assert serializer_of(out) == kind


# ---------------------------------------------------------------------------------------------------------
# 6. API conveniences


def test_equivalent_tolerance_dispatch_and_loadables(tmp_path):
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1)).double()
    net = relusym.load(model)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    assert relusym.equivalent(model, tmp_path / "m.pt")  # a module and a path, no load() needed
    assert relusym.normal_form(tmp_path / "m.pt") == normal_form(net)
    nudged = Network(net.V, net.A, net.b, net.c + 1e-12)
    assert not relusym.equivalent(net, nudged)
    approx = relusym.equivalent(net, nudged, atol=1e-9)
    assert type(approx).__name__ == "ApproxVerdict" and bool(approx)
    back = relusym.to_torch(net)
    assert isinstance(back, torch.nn.Module) and relusym.load(back).same_parameters(net)
    with pytest.raises(NotRepresentableError):
        relusym.to_torch(Network([[1]], [[F(1, 3)]], [0]))


def test_transposed_arrays_get_a_hint():
    with pytest.raises(InvalidNetworkError, match="A looks transposed"):
        Network(np.ones((1, 3)), np.ones((2, 3)), np.ones(3))
    with pytest.raises(InvalidNetworkError, match="V looks transposed"):
        Network(np.ones((3, 1)), np.ones((3, 2)), np.ones(3))


def test_writing_in_the_layout_of_a_torchscript_archive_or_a_model_folder(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    torch.jit.save(torch.jit.trace(model, torch.zeros(1, 3)), tmp_path / "ts.pt")
    net = relusym.load(tmp_path / "ts.pt")
    info = save(net, tmp_path / "out.pt", like=tmp_path / "ts.pt")
    assert info.exact and any("state_dict" in n for n in info.notes)
    sd = torch.load(tmp_path / "out.pt", weights_only=True)
    assert sorted(sd) == sorted(model.state_dict())
    folder = tmp_path / "hf"
    folder.mkdir()
    st.save_file({f"mlp.{k}": v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    assert save(net, tmp_path / "out.safetensors", like=folder).exact
    assert sorted(st.load_file(str(tmp_path / "out.safetensors"))) == sorted(f"mlp.{k}" for k in model.state_dict())
    with pytest.raises(InvalidNetworkError, match="JSON holds exact rationals"):
        save(net, tmp_path / "x.json", dtype="float16")


def test_pruned_files_run_in_their_own_framework(tmp_path):
    """skl2onnx regressor → prune → save like → onnxruntime gives the original's outputs; a joblib MLP → prune →
    save like → scikit-learn's predict gives the original's; a bfloat16 Flax msgpack keeps bfloat16."""
    pytest.importorskip("skl2onnx")
    ort = pytest.importorskip("onnxruntime")
    joblib = pytest.importorskip("joblib")
    from skl2onnx import to_onnx
    from sklearn.neural_network import MLPRegressor

    X, y = _mlp_data()
    est = MLPRegressor(hidden_layer_sizes=(4,), max_iter=30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    # make two hidden neurons share a hyperplane, with output weights whose sum every float type holds
    est.coefs_[0][:, 1] = 2 * est.coefs_[0][:, 0]
    est.intercepts_[0][1] = 2 * est.intercepts_[0][0]
    est.coefs_[1][:2, 0] = [0.5, 0.25]
    onnx_path = tmp_path / "mlp.onnx"
    onnx_path.write_bytes(to_onnx(est, X[:1].astype(np.float32)).SerializeToString())
    small = relusym.prune(relusym.load(onnx_path))
    assert small.n == 3
    assert relusym.save(small, tmp_path / "small.onnx", like=onnx_path).exact
    xs = X.astype(np.float32)
    run = lambda p: ort.InferenceSession(str(p)).run(None, {ort.InferenceSession(str(p)).get_inputs()[0].name: xs})[0]  # noqa: E731
    np.testing.assert_allclose(run(tmp_path / "small.onnx").ravel(), run(onnx_path).ravel(), rtol=1e-5, atol=1e-5)
    # joblib → prune → joblib, predicted by scikit-learn itself
    joblib.dump(est, tmp_path / "mlp.joblib")
    with pytest.warns(RuntimeWarning):
        net = relusym.io.load(tmp_path / "mlp.joblib", allow_unsafe_pickle=True)
    small = relusym.prune(net)
    assert relusym.save(small, tmp_path / "small.joblib", like=tmp_path / "mlp.joblib").exact
    back = joblib.load(tmp_path / "small.joblib")
    assert back.coefs_[0].shape == (3, 3)
    np.testing.assert_allclose(back.predict(X), est.predict(X), rtol=1e-12, atol=1e-12)


def test_bf16_flax_msgpack_round_trip(tmp_path):
    pytest.importorskip("flax")
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from flax import serialization

    bf = ml_dtypes.bfloat16
    k0 = np.array([[1.0, 2.0, 1.0], [0.5, -1.0, 0.5]], dtype=bf)  # columns 0 and 2: one hyperplane
    params = {
        "params": {
            "Dense_0": {"kernel": k0, "bias": np.array([0.25, 1.0, 0.25], dtype=bf)},
            "Dense_1": {"kernel": np.array([[0.5], [-1.0], [0.25]], dtype=bf), "bias": np.array([0.0], dtype=bf)},
        }
    }
    (tmp_path / "p.msgpack").write_bytes(serialization.to_bytes(params))
    net, info = load_with_info(tmp_path / "p.msgpack")
    assert info.activation == "assumed" and net.n == 3
    small = relusym.prune(net)
    assert small.n == 2
    assert relusym.save(small, tmp_path / "small.msgpack", like=tmp_path / "p.msgpack").exact
    back = serialization.msgpack_restore((tmp_path / "small.msgpack").read_bytes())
    assert back["params"]["Dense_0"]["kernel"].dtype == bf and back["params"]["Dense_0"]["kernel"].shape == (2, 2)
    assert normal_form(relusym.load(tmp_path / "small.msgpack")) == normal_form(net)
    # a merged weight bfloat16 cannot hold is refused, naming it
    nudged = Network(np.array([[1.0, 0.5, 2.0**-9]]), net.A, net.b, net.c)  # merged: 1 + 2⁻⁹
    with pytest.raises(NotRepresentableError, match="bfloat16"):
        relusym.save(relusym.prune(nudged), tmp_path / "bad.msgpack", like=tmp_path / "p.msgpack")
    assert not (tmp_path / "bad.msgpack").exists()


def test_progress_bars_on_the_long_searches(capsys, tmp_path):
    """progress=True draws a tqdm bar on stderr (whatever the stream); progress=False never does."""
    pytest.importorskip("tqdm")
    from relusym.census import run_census
    from relusym.report import report_html

    rng = np.random.default_rng(3)
    net = Network([[1, 1, 2]], [[1], [-1], [2]], [0, 1, 0])
    big = Network(rng.standard_normal((1, 40)), rng.standard_normal((40, 3)), rng.standard_normal(40))
    calls = {
        "fibre": lambda p: relusym.fiber(net, progress=p),
        "minimal width": lambda p: relusym.minimal_width(Network([[1, 1]], [[1], [-1]], [0, 0]), progress=p),
        "prune": lambda p: relusym.prune(net, progress=p),
        "align": lambda p: relusym.align(big, big, progress=p),
        "census": lambda p: run_census(sample_231=0, limit_121=3, progress=p),
        "report": lambda p: report_html(net, progress=p),
    }
    for desc, call in calls.items():
        call(False)
        assert capsys.readouterr().err == "", desc
        call(True)
        assert desc in capsys.readouterr().err, desc


def test_linen_modules_are_traced_too():
    pytest.importorskip("flax")
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    class Mlp(nn.Module):
        act: object = nn.relu

        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(self.act(nn.Dense(4)(x)))

    for act, ok in ((nn.relu, True), (nn.tanh, False), (nn.gelu, False)):
        mod = Mlp(act=act)
        params = mod.init(jax.random.PRNGKey(0), jnp.zeros((1, 3)))
        if ok:
            assert relusym.load(mod.bind(params)).same_parameters(relusym.load(params))
        else:
            with pytest.raises(UnsupportedModelError, match="applies"):
                relusym.load(mod.bind(params))
    with pytest.raises(UnsupportedModelError, match="unbound"):
        relusym.load(Mlp())
