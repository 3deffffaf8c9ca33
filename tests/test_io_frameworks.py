"""Framework formats: PyTorch, safetensors, ONNX, scikit-learn, JAX/Flax.

Every model is built here (nothing is downloaded).  Each section skips when its framework is not installed.
Round trips: load → save → load gives identical arrays, and the saved model, run by its own framework, computes
``net.evaluate`` on random inputs.  Hostile inputs each give one clear sentence.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

import relusym
from relusym._core.network import Network
from relusym.errors import InvalidNetworkError, UnsupportedModelError

RNG = np.random.default_rng(20260415)


def same_arrays(n1: Network, n2: Network) -> bool:
    """Identical parameters, dtype included."""
    return all(
        x.dtype == y.dtype and np.array_equal(x, y)
        for x, y in zip((n1.V, n1.A, n1.b, n1.c), (n2.V, n2.A, n2.b, n2.c), strict=True)
    )


def one_sentence(exc: BaseException) -> str:
    msg = str(exc)
    assert "\n" not in msg and msg, msg
    return msg


def corrupt(path: Path, out: Path, *, truncate: bool, at: int = 64) -> Path:
    """Half of the file, or 40 bytes scrambled from offset ``at`` (the metadata, not the raw weights)."""
    data = bytearray(path.read_bytes())
    if truncate:
        data = data[: len(data) // 2]
    else:
        for i in range(at, min(at + 40, len(data))):
            data[i] ^= 0xA5
    out.write_bytes(bytes(data))
    return out


# ----------------------------------------------------------------------------------------------------------
# PyTorch


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def seq(torch, m=4, n=7, k=3, bias=True, dtype=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(m, n, bias=bias), torch.nn.ReLU(), torch.nn.Linear(n, k, bias=bias))
    return model.to(dtype) if dtype is not None else model


def run_torch(torch, model, X):
    with torch.no_grad():
        p = next(model.parameters())
        return model(torch.from_numpy(X).to(p.dtype)).double().numpy()


def test_torch_module_and_state_dict(torch):
    model = seq(torch)
    net = relusym.load(model)
    assert net.shape == (4, 7, 3) and net.A.dtype == np.float32  # exact float32 values, not widened
    X = RNG.standard_normal((20, 4))
    np.testing.assert_allclose(net.evaluate(X), run_torch(torch, model, X), rtol=1e-5, atol=1e-5)
    assert same_arrays(relusym.load(model.state_dict()), net)
    assert np.array_equal(net.A, model[0].weight.detach().numpy())
    assert np.array_equal(net.V, model[2].weight.detach().numpy())


def test_torch_file_round_trip(torch, tmp_path):
    from relusym.io import _torch_format as torch_format

    model = seq(torch)
    src = tmp_path / "model.pt"
    torch.save(model.state_dict(), src)
    assert torch_format.sniff(src, src.read_bytes()[:64])
    net = relusym.load(src)
    out = tmp_path / "copy.pt"
    relusym.save(net, out, like=src)
    sd = torch.load(out, weights_only=True)
    assert list(sd) == list(model.state_dict())
    assert all(sd[k].dtype == v.dtype and torch.equal(sd[k], v) for k, v in model.state_dict().items())
    assert same_arrays(relusym.load(out), net)
    # the saved file runs in torch and computes the network
    fresh = seq(torch)
    fresh.load_state_dict(sd)
    X = RNG.standard_normal((16, 4))
    np.testing.assert_allclose(run_torch(torch, fresh, X), net.evaluate(X), rtol=1e-5, atol=1e-5)
    # default layout: an nn.Sequential state_dict
    plain = tmp_path / "plain.pth"
    relusym.save(net, plain)
    assert list(torch.load(plain, weights_only=True)) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert same_arrays(relusym.load(plain), net)


def test_torch_without_bias(torch, tmp_path):
    model = seq(torch, bias=False)
    net = relusym.load(model)
    assert not net.b.any() and not net.c.any()
    src = tmp_path / "nobias.pt"
    torch.save(model.state_dict(), src)
    out = tmp_path / "out.pt"
    relusym.save(relusym.load(src), out, like=src)
    sd = torch.load(out, weights_only=True)
    assert sorted(sd) == ["0.weight", "2.weight"]  # zero biases stay absent, as in the original
    seq(torch, bias=False).load_state_dict(sd)  # strict load works


def test_torch_custom_module_traced(torch):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.out = torch.nn.Linear(5, 3)  # registered first, applied last
            self.hidden = torch.nn.Linear(3, 5)

        def forward(self, x):
            return self.out(torch.nn.functional.relu(self.hidden(x)))

    torch.manual_seed(1)
    model = Net()
    net = relusym.load(model)
    assert net.shape == (3, 5, 3)
    X = RNG.standard_normal((10, 3))
    np.testing.assert_allclose(net.evaluate(X), run_torch(torch, model, X), rtol=1e-5, atol=1e-5)

    class Tanh(Net):
        def forward(self, x):
            return self.out(torch.tanh(self.hidden(x)))

    with pytest.raises(UnsupportedModelError, match="tanh"):
        relusym.load(Tanh())


def test_torch_to_module(torch):
    from relusym.io import _torch_format as torch_format

    net = Network(
        RNG.standard_normal((2, 6)), RNG.standard_normal((6, 3)), RNG.standard_normal(6), RNG.standard_normal(2)
    )
    model = torch_format.to_module(net)
    assert next(model.parameters()).dtype == torch.float64
    X = RNG.standard_normal((9, 3))
    np.testing.assert_allclose(run_torch(torch, model, X), net.evaluate(X), rtol=1e-12, atol=1e-12)
    assert same_arrays(relusym.load(model), net)


def test_torch_bfloat16_exact(torch, tmp_path):
    model = seq(torch, dtype=torch.bfloat16)
    net = relusym.load(model)
    assert net.A.dtype == np.float32
    assert np.array_equal(net.A, model[0].weight.float().detach().numpy())
    src = tmp_path / "bf16.pt"
    torch.save(model.state_dict(), src)
    out = tmp_path / "out.pt"
    relusym.save(relusym.load(src), out, like=src)
    sd = torch.load(out, weights_only=True)
    assert all(v.dtype == torch.bfloat16 and torch.equal(v, model.state_dict()[k]) for k, v in sd.items())


def test_torch_equivalence_through_normal_form(torch):
    model = seq(torch, n=9)
    perm = torch.randperm(9)
    scale = torch.exp(torch.randn(9)).to(torch.float32)
    other = seq(torch, n=9)
    with torch.no_grad():
        other[0].weight.copy_(model[0].weight[perm] * 2.0)  # power-of-two scaling stays exact
        other[0].bias.copy_(model[0].bias[perm] * 2.0)
        other[2].weight.copy_(model[2].weight[:, perm] / 2.0)
        other[2].bias.copy_(model[2].bias)
    n1, n2 = relusym.load(model), relusym.load(other)
    assert relusym.equivalent(n1, n2)
    assert relusym.normal_form(n1) == relusym.normal_form(n2)
    with torch.no_grad():
        other[0].weight.copy_(model[0].weight[perm] * scale[:, None])  # float32 rounding: not exactly equal
    assert not relusym.equivalent(n1, relusym.load(other))


def test_torch_hostile_inputs(torch, tmp_path):
    model = seq(torch)
    pickled = tmp_path / "module.pt"
    torch.save(model, pickled)  # a whole module: unpickling it would run code
    with pytest.raises(UnsupportedModelError, match="weights_only") as exc:
        relusym.load(pickled)
    one_sentence(exc.value)
    good = tmp_path / "good.pt"
    torch.save(model.state_dict(), good)
    for truncate in (True, False):
        bad = corrupt(good, tmp_path / f"bad{truncate}.pt", truncate=truncate)
        with pytest.raises((InvalidNetworkError, UnsupportedModelError)) as exc:
            relusym.load(bad)
        one_sentence(exc.value)
    cases = [
        (torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Sigmoid(), torch.nn.Linear(5, 2)), "Sigmoid"),
        (
            torch.nn.Sequential(
                torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)
            ),
            "Tanh",
        ),
        (torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Linear(5, 2)), "no ReLU"),
        (
            torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.BatchNorm1d(5), torch.nn.Linear(5, 2)),
            "BatchNorm1d",
        ),
    ]
    for bad_model, word in cases:
        with pytest.raises(UnsupportedModelError, match=word) as exc:
            relusym.load(bad_model)
        one_sentence(exc.value)
    three = {f"{i}.weight": torch.randn(4, 4) for i in (0, 2, 4)}  # deep: read as an MLP (tests/test_io_deep.py)
    assert relusym.load(three).widths == (4, 4, 4, 4)
    with pytest.raises(UnsupportedModelError, match="one linear layer"):
        relusym.load({"0.weight": torch.randn(4, 4)})
    mismatched = {"0.weight": torch.randn(5, 3), "0.bias": torch.randn(5), "2.weight": torch.randn(2, 4)}
    with pytest.raises(InvalidNetworkError, match="do not chain") as exc:
        relusym.load(mismatched)
    one_sentence(exc.value)
    wrong_bias = {"0.weight": torch.randn(5, 3), "0.bias": torch.randn(4), "2.weight": torch.randn(2, 5)}
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)):
        relusym.load(wrong_bias)
    sd = model.state_dict()
    sd["0.weight"][1, 2] = float("nan")
    with pytest.raises(InvalidNetworkError, match="NaN") as exc:
        relusym.load(sd)
    assert "0.weight" in one_sentence(exc.value)


# ----------------------------------------------------------------------------------------------------------
# safetensors


def test_safetensors_round_trip(torch, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    from relusym.io import _safetensors_format as safetensors_format

    model = seq(torch)
    src = tmp_path / "model.safetensors"
    st.save_file(model.state_dict(), str(src))
    assert safetensors_format.sniff(src, src.read_bytes()[:64])
    net = relusym.load(src)
    assert same_arrays(net, relusym.load(model))
    out = tmp_path / "copy.safetensors"
    relusym.save(net, out, like=src)
    back = st.load_file(str(out))
    assert sorted(back) == sorted(model.state_dict())
    fresh = seq(torch)
    fresh.load_state_dict(back)
    X = RNG.standard_normal((12, 4))
    np.testing.assert_allclose(run_torch(torch, fresh, X), net.evaluate(X), rtol=1e-5, atol=1e-5)
    assert same_arrays(relusym.load(out), net)


def test_safetensors_numpy_only_and_kernels(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    A = RNG.standard_normal((6, 3)).astype(np.float32)
    V = RNG.standard_normal((2, 6)).astype(np.float32)
    b = RNG.standard_normal(6).astype(np.float32)
    # Flax-style names: kernels are in×out; the names sort the output layer first
    src = tmp_path / "flax.safetensors"
    stn.save_file({"a_out/kernel": V.T.copy(), "b_hidden/kernel": A.T.copy(), "b_hidden/bias": b}, str(src))
    net = relusym.load(src)
    assert np.array_equal(net.A, A) and np.array_equal(net.V, V) and np.array_equal(net.b, b)
    assert not net.c.any()
    out = tmp_path / "out.safetensors"
    relusym.save(net, out, like=src)
    back = stn.load_file(str(out))
    assert sorted(back) == ["a_out/kernel", "b_hidden/bias", "b_hidden/kernel"]
    assert np.array_equal(back["a_out/kernel"], V.T)


def test_safetensors_bfloat16(torch, tmp_path):
    st = pytest.importorskip("safetensors.torch")
    model = seq(torch, dtype=torch.bfloat16)
    src = tmp_path / "bf16.safetensors"
    st.save_file(model.state_dict(), str(src))
    net = relusym.load(src)  # decoded without torch: numpy has no bfloat16
    assert net.A.dtype == np.float32 and same_arrays(net, relusym.load(model))
    out = tmp_path / "out.safetensors"
    relusym.save(net, out, like=src)
    back = st.load_file(str(out))
    assert all(v.dtype == torch.bfloat16 and torch.equal(v, model.state_dict()[k]) for k, v in back.items())


def test_safetensors_hostile(tmp_path):
    stn = pytest.importorskip("safetensors.numpy")
    good = tmp_path / "good.safetensors"
    stn.save_file({"0.weight": np.ones((4, 3), np.float32), "2.weight": np.ones((2, 4), np.float32)}, str(good))
    for truncate in (True, False):
        bad = corrupt(good, tmp_path / f"bad{truncate}.safetensors", truncate=truncate)
        try:
            relusym.load(bad)
        except (InvalidNetworkError, UnsupportedModelError) as exc:
            one_sentence(exc)
    short = tmp_path / "short.safetensors"
    short.write_bytes(good.read_bytes()[:20])
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)):
        relusym.load(short)
    three = tmp_path / "three.safetensors"
    stn.save_file({f"{i}.weight": np.ones((4, 4), np.float32) for i in (0, 2, 4)}, str(three))
    assert relusym.load(three).widths == (4, 4, 4, 4)  # deep: read as an MLP (tests/test_io_deep.py)
    unchained = tmp_path / "unchained.safetensors"
    stn.save_file({f"{i}.weight": np.ones((4, 3 + i), np.float32) for i in (0, 2, 4)}, str(unchained))
    with pytest.raises(InvalidNetworkError, match="do not chain"):
        relusym.load(unchained)
    conv = tmp_path / "conv.safetensors"
    stn.save_file(
        {
            "0.weight": np.ones((4, 3), np.float32),
            "1.weight": np.ones((2, 2, 3, 3), np.float32),
            "2.weight": np.ones((2, 4), np.float32),
        },
        str(conv),
    )
    with pytest.raises(UnsupportedModelError, match="convolution"):
        relusym.load(conv)
    nan = tmp_path / "nan.safetensors"
    w = np.ones((4, 3), np.float32)
    w[2, 1] = np.nan
    stn.save_file({"0.weight": w, "2.weight": np.ones((2, 4), np.float32)}, str(nan))
    with pytest.raises(InvalidNetworkError, match=r"0\.weight.*NaN"):
        relusym.load(nan)


# ----------------------------------------------------------------------------------------------------------
# ONNX


def ort_run(model_or_path, X):
    ort = pytest.importorskip("onnxruntime")
    src = model_or_path.SerializeToString() if hasattr(model_or_path, "SerializeToString") else str(model_or_path)
    sess = ort.InferenceSession(src, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0]
    dtype = {"tensor(float)": np.float32, "tensor(double)": np.float64, "tensor(float16)": np.float16}[inp.type]
    return sess.run(None, {inp.name: X.astype(dtype)})[0].astype(np.float64)


def test_onnx_export_from_torch(torch, tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    model = seq(torch)
    src = tmp_path / "model.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (torch.randn(2, 4),), str(src), dynamo=True, dynamic_shapes=({0: torch.export.Dim("batch")},)
        )
    net = relusym.load(src)
    assert same_arrays(net, relusym.load(model))
    X = RNG.standard_normal((25, 4))
    np.testing.assert_allclose(ort_run(src, X), net.evaluate(X), rtol=1e-5, atol=1e-5)
    out = tmp_path / "copy.onnx"
    relusym.save(net, out, like=src)
    np.testing.assert_allclose(ort_run(out, X), net.evaluate(X), rtol=1e-5, atol=1e-5)
    assert same_arrays(relusym.load(out), net)


def _gemm_model(onnx, W1, b1, W2, b2, *, alpha=1.0, beta=1.0, trans_b=0, tail=None, matmul=False):
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Gemm", ["x", "W1", "b1"], ["h"], alpha=alpha, beta=beta, transB=trans_b),
        helper.make_node("Relu", ["h"], ["r"]),
    ]
    if matmul:
        nodes += [helper.make_node("MatMul", ["r", "W2"], ["y0"]), helper.make_node("Add", ["b2", "y0"], ["y"])]
    else:
        nodes.append(helper.make_node("Gemm", ["r", "W2", "b2"], ["y"], transB=1))
    out = "y"
    if tail:
        nodes.append(helper.make_node(tail, ["y"], ["z"]))
        out = "z"
    inits = [numpy_helper.from_array(a, name) for a, name in ((W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2"))]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 3])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["B", 2])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_onnx_gemm_attributes_matmul_add(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    W1 = RNG.standard_normal((3, 5)).astype(np.float32)  # transB=0: in×out
    b1 = RNG.standard_normal(5).astype(np.float32)
    W2 = RNG.standard_normal((5, 2)).astype(np.float32)  # MatMul: in×out
    b2 = RNG.standard_normal(2).astype(np.float32)
    model = _gemm_model(onnx, W1, b1, W2, b2, alpha=0.3, beta=0.7, matmul=True)
    net = relusym.load(model)
    # alpha·W1 and beta·b1 are exact (float32 × float32 fits in float64)
    assert np.array_equal(net.A, W1.T.astype(np.float64) * np.float64(np.float32(0.3)))
    assert np.array_equal(net.b, b1.astype(np.float64) * np.float64(np.float32(0.7)))
    X = RNG.standard_normal((30, 3))
    np.testing.assert_allclose(ort_run(model, X), net.evaluate(X), rtol=1e-5, atol=1e-5)
    src = tmp_path / "gemm.onnx"
    onnx.save(model, str(src))
    out = tmp_path / "out.onnx"
    relusym.save(net, out, like=src)
    saved = onnx.load(str(out))
    assert [n.op_type for n in saved.graph.node] == ["Gemm", "Relu", "MatMul", "Add"]
    np.testing.assert_allclose(ort_run(out, X), net.evaluate(X), rtol=1e-5, atol=1e-5)


def test_onnx_float64_written_and_run_exactly(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    net = Network(
        RNG.standard_normal((3, 8)), RNG.standard_normal((8, 4)), RNG.standard_normal(8), RNG.standard_normal(3)
    )
    out = tmp_path / "f64.onnx"
    relusym.save(net, out)
    X = RNG.standard_normal((20, 4))
    np.testing.assert_allclose(ort_run(out, X), net.evaluate(X), rtol=1e-12, atol=1e-12)
    assert same_arrays(relusym.load(out), net)


def test_onnx_hostile(tmp_path):
    onnx = pytest.importorskip("onnx")
    W1 = np.ones((3, 5), np.float32)
    b1 = np.ones(5, np.float32)
    W2 = np.ones((2, 5), np.float32)
    b2 = np.ones(2, np.float32)
    for op in ("Softmax", "Sigmoid"):
        # an output activation is a classifier head outside ρ: the logits are read, with the warning that says so
        with pytest.warns(UserWarning, match=f"{op}.*logits only"):
            net = relusym.load(_gemm_model(onnx, W1, b1, W2, b2, trans_b=0, tail=op))
        assert net.same_parameters(relusym.load(_gemm_model(onnx, W1, b1, W2, b2, trans_b=0)))
    good = tmp_path / "good.onnx"
    onnx.save(_gemm_model(onnx, W1, b1, W2, b2), str(good))
    bad = corrupt(good, tmp_path / "bad.onnx", truncate=True)
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)) as exc:
        relusym.load(bad)
    one_sentence(exc.value)
    with pytest.raises(InvalidNetworkError, match="does not fit|outputs"):
        relusym.load(_gemm_model(onnx, W1, np.ones(4, np.float32), W2, b2))


# ----------------------------------------------------------------------------------------------------------
# scikit-learn


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    return X, y


def fitted(kind, X, y, **kw):
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier, MLPRegressor

    cls = MLPClassifier if kind == "clf" else MLPRegressor
    params = {"hidden_layer_sizes": (16,), "max_iter": 5, "random_state": 0}
    params.update(kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return cls(**params).fit(X, y)


def test_sklearn_regressor(digits, tmp_path):
    X, y = digits
    est = fitted("reg", X, y.astype(float))
    net = relusym.load(est)
    assert net.shape == (64, 16, 1)
    assert np.array_equal(net.A, est.coefs_[0].T) and np.array_equal(net.V, est.coefs_[1].T)
    np.testing.assert_allclose(net.evaluate(X)[:, 0], est.predict(X), rtol=1e-12, atol=1e-12)
    from relusym.io import _sklearn_format as sklearn_format

    back = sklearn_format.to_estimator(net)
    np.testing.assert_allclose(back.predict(X), est.predict(X), rtol=1e-12, atol=1e-12)
    out = tmp_path / "mlp.joblib"
    relusym.save(net, out)
    with pytest.raises(UnsupportedModelError, match="allow_unsafe_pickle") as exc:
        relusym.load(out)  # never unpickled by default
    one_sentence(exc.value)
    with pytest.warns(RuntimeWarning, match="runs any code"):
        again = sklearn_format.load_pickle(out, allow_unsafe_pickle=True)
    assert same_arrays(again, net)


def test_sklearn_classifier_logits(digits):
    from scipy.special import softmax

    from relusym.io._sklearn_format import LogitsOnlyWarning

    X, y = digits
    est = fitted("clf", X, y)
    with pytest.warns(LogitsOnlyWarning, match="softmax"):
        net = relusym.load(est)
    assert net.k == 10
    np.testing.assert_allclose(softmax(net.evaluate(X), axis=1), est.predict_proba(X), rtol=1e-9, atol=1e-12)


def test_sklearn_refusals(digits, tmp_path):
    X, y = digits
    with pytest.raises(UnsupportedModelError, match="tanh"):
        relusym.load(fitted("reg", X, y.astype(float), activation="tanh"))
    deep = fitted("reg", X, y.astype(float), hidden_layer_sizes=(8, 8))  # deep: an MLP (tests/test_io_deep.py)
    assert relusym.load(deep).widths == (X.shape[1], 8, 8, 1)
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    with pytest.raises(UnsupportedModelError, match="not fitted"):
        relusym.load(MLPRegressor())
    with pytest.raises(UnsupportedModelError, match="Pipeline"):
        relusym.load(make_pipeline(StandardScaler(), MLPRegressor()))
    pkl = tmp_path / "model.pkl"
    pkl.write_bytes(pickle.dumps(fitted("reg", X, y.astype(float))))
    with pytest.raises(UnsupportedModelError, match="refusing to unpickle"):
        relusym.load(pkl)


# ----------------------------------------------------------------------------------------------------------
# JAX / Flax


@pytest.fixture(scope="module")
def linen():
    pytest.importorskip("jax")
    return pytest.importorskip("flax.linen")


def flax_mlp(linen):
    import jax
    import jax.numpy as jnp

    class MLP(linen.Module):
        @linen.compact
        def __call__(self, x):
            return linen.Dense(2)(linen.relu(linen.Dense(6)(x)))  # Dense_0 is the OUTPUT layer

    module = MLP()
    return module, module.init(jax.random.PRNGKey(0), jnp.ones((1, 3)))


def same_tree(t1, t2) -> bool:
    """Same nested keys, and leaves with the same dtype and values."""
    if isinstance(t1, dict) or isinstance(t2, dict):
        return (
            isinstance(t1, dict)
            and isinstance(t2, dict)
            and sorted(t1) == sorted(t2)
            and all(same_tree(t1[k], t2[k]) for k in t1)
        )
    return t1.dtype == t2.dtype and t1.shape == t2.shape and np.array_equal(t1, t2)


def test_flax_params_ordered_by_shape(linen):
    module, params = flax_mlp(linen)
    assert params["params"]["Dense_0"]["kernel"].shape == (6, 2)
    net = relusym.load(params)
    assert net.shape == (3, 6, 2)
    X = RNG.standard_normal((15, 3)).astype(np.float32)
    np.testing.assert_allclose(net.evaluate(X), np.asarray(module.apply(params, X)), rtol=1e-5, atol=1e-5)
    assert same_arrays(relusym.load(params["params"]), net)  # without the wrapper too


def test_flax_msgpack_round_trip(linen, tmp_path):
    import flax.serialization as fs

    from relusym.io import _flax_format as flax_format

    module, params = flax_mlp(linen)
    src = tmp_path / "params.msgpack"
    src.write_bytes(fs.to_bytes(params))
    assert flax_format.sniff(src, src.read_bytes()[:64])
    net = relusym.load(src)
    assert same_arrays(net, relusym.load(params))
    assert same_arrays(flax_format.from_params(flax_format._restore_plain(src.read_bytes())), net)  # msgpack only
    out = tmp_path / "copy.msgpack"
    relusym.save(net, out, like=src)
    assert same_tree(fs.msgpack_restore(out.read_bytes()), fs.msgpack_restore(src.read_bytes()))
    restored = fs.from_bytes(params, out.read_bytes())
    X = RNG.standard_normal((10, 3)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(module.apply(restored, X)), net.evaluate(X), rtol=1e-5, atol=1e-5)
    plain = tmp_path / "plain.msgpack"
    plain.write_bytes(flax_format._serialize_plain(flax_format.to_params(net)))
    assert same_arrays(relusym.load(plain), net)


def test_flax_bfloat16(linen, tmp_path):
    import flax.serialization as fs
    import jax
    import jax.numpy as jnp

    _, params = flax_mlp(linen)
    bf = jax.tree_util.tree_map(lambda a: a.astype(jnp.bfloat16), params)
    src = tmp_path / "bf16.msgpack"
    src.write_bytes(fs.to_bytes(bf))
    net = relusym.load(src)
    assert net.A.dtype == np.float32
    out = tmp_path / "out.msgpack"
    relusym.save(net, out, like=src)
    assert same_tree(fs.msgpack_restore(out.read_bytes()), fs.msgpack_restore(src.read_bytes()))


def test_flax_hostile(linen, tmp_path):
    import jax
    import jax.numpy as jnp

    class Deep(linen.Module):
        @linen.compact
        def __call__(self, x):
            return linen.Dense(2)(linen.relu(linen.Dense(4)(linen.relu(linen.Dense(4)(x)))))

    params = Deep().init(jax.random.PRNGKey(0), jnp.ones((1, 3)))
    assert relusym.load(params).widths == (3, 4, 4, 2)  # deep: read as an MLP (tests/test_io_deep.py)

    class DeepTanh(linen.Module):
        @linen.compact
        def __call__(self, x):
            return linen.Dense(2)(linen.tanh(linen.Dense(4)(linen.relu(linen.Dense(4)(x)))))

    tanh = DeepTanh()
    with pytest.raises(UnsupportedModelError, match="tanh"):
        relusym.load(tanh.bind(tanh.init(jax.random.PRNGKey(0), jnp.ones((1, 3)))))

    class WithNorm(linen.Module):
        @linen.compact
        def __call__(self, x):
            return linen.Dense(2)(linen.relu(linen.LayerNorm()(linen.Dense(4)(x))))

    with pytest.raises(UnsupportedModelError, match="scale"):
        relusym.load(WithNorm().init(jax.random.PRNGKey(0), jnp.ones((1, 3))))
    bad = tmp_path / "bad.msgpack"
    import flax.serialization as fs

    _, good = flax_mlp(linen)
    bad.write_bytes(fs.to_bytes(good)[:40])
    with pytest.raises((InvalidNetworkError, UnsupportedModelError)) as exc:
        relusym.load(bad)
    one_sentence(exc.value)


# ----------------------------------------------------------------------------------------------------------
# dispatch


def test_accepts_is_exclusive(torch, linen):
    from relusym.io import (
        _flax_format as flax_format,
    )
    from relusym.io import (
        _onnx_format as onnx_format,
    )
    from relusym.io import (
        _safetensors_format as safetensors_format,
    )
    from relusym.io import (
        _sklearn_format as sklearn_format,
    )
    from relusym.io import (
        _torch_format as torch_format,
    )

    mods = [torch_format, safetensors_format, onnx_format, sklearn_format, flax_format]
    _, params = flax_mlp(linen)
    cases = {torch_format: [seq(torch), seq(torch).state_dict()], flax_format: [params, params["params"]]}
    for owner, objs in cases.items():
        for obj in objs:
            assert [m.NAME for m in mods if m.accepts(obj)] == [owner.NAME]
    assert not any(m.accepts({"a": np.ones(3)}) for m in mods)
