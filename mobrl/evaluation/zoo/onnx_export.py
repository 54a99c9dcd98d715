"""A zoo policy's network as an ONNX model, built from its arrays with the `onnx` package's
helper API (no torch): `observation` (float32, [batch, size]) in; `logits` (float32, [batch,
logits]) and `action` (int64: the argmax, [batch], or [batch, sub-actions] for MultiDiscrete
policies) out, with a dynamic batch dimension. The env it acts in is in the model's
metadata_props, so a runtime elsewhere knows what to feed it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from mobrl.core.errors import UserError, first_line

#: ONNX opset and IR version of the models written: opset 17 (IR 8) runs on onnxruntime
#: 1.13 and later and on most other runtimes
OPSET = 17
IR_VERSION = 8
#: the operators of each activation the zoo's MLPs use (`zoo.ACTIVATIONS`)
OPERATORS = {"Tanh": "Tanh", "ReLU": "Relu", "Identity": "Identity"}
INPUT, LOGITS, ACTION = "observation", "logits", "action"


def onnx_module() -> Any:
    """The `onnx` package, or a one-line error naming the extra that installs it."""
    try:
        import onnx
    except ImportError as err:
        raise UserError(
            f"--format onnx needs the onnx package ({first_line(err)}). Install it: "
            "pip install 'mobrl[onnx]'."
        ) from err
    return onnx


def action_count(layers: list[tuple[str, Any]], nvec: list[int] | None) -> int | list[int]:
    """The actions of a network whose head gives the logits: its output width, or one count
    per sub-action (`nvec`), checked against that width."""
    linear = [value for kind, value in layers if kind == "linear"]
    if not linear or layers[-1][0] != "linear":
        raise UserError(
            "cannot export this policy to ONNX: its network does not end in a linear layer "
            "giving the action logits. Export a policy of RLlib's default MLP modules."
        )
    width = int(linear[-1][1].shape[0])
    if nvec is not None and sum(nvec) != width:
        raise UserError(
            f"cannot export this policy to ONNX: its head gives {width} logits but its actions "
            f"need {sum(nvec)} ({nvec}). Export the entry again with `mobrl zoo export`."
        )
    return width if nvec is None else [int(n) for n in nvec]


def build_model(
    layers: list[tuple[str, Any]],
    nvec: list[int] | None,
    metadata: dict[str, Any],
    name: str = "policy",
) -> Any:
    """The ONNX model of `layers` (`zoo.load_layers` or `zoo.export_layers`): MatMul and Add
    per linear layer, the activation's operator, then ArgMax of the logits (of each
    sub-action's logits, concatenated, for MultiDiscrete actions `nvec`). `metadata` goes
    into metadata_props (values that are not strings as JSON)."""
    onnx = onnx_module()
    from onnx import helper

    action_count(layers, nvec)
    nodes, initializers = _layer_nodes(layers)
    action_shape = _action_nodes(nvec, nodes, initializers)
    graph = _graph(layers, nvec, name, nodes, initializers, action_shape)
    model = helper.make_model(
        graph,
        producer_name="mobrl",
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        doc_string=f"mobrl policy {name}: observations in, action logits and actions out.",
    )
    helper.set_model_props(
        model, {k: v if isinstance(v, str) else json.dumps(v) for k, v in metadata.items()}
    )
    onnx.checker.check_model(model, full_check=True)
    return model


def _layer_nodes(layers: list[tuple[str, Any]]) -> tuple[list[Any], list[Any]]:
    """The nodes and initializers of the network from `INPUT` to `LOGITS`: MatMul and Add per
    linear layer, the activation's operator per activation."""
    from onnx import helper, numpy_helper

    nodes, initializers = [], []
    x = INPUT
    for i, (kind, value) in enumerate(layers):
        if kind == "linear":
            weight, bias = value
            w, b = f"layer{i}.weight_t", f"layer{i}.bias"
            # (out, in) as RLlib stores it, transposed once: x @ W.T + b, as numpy computes it
            initializers.append(numpy_helper.from_array(np.ascontiguousarray(weight.T, "f4"), w))
            initializers.append(numpy_helper.from_array(np.asarray(bias, "f4"), b))
            nodes.append(helper.make_node("MatMul", [x, w], [f"layer{i}.matmul"]))
            nodes.append(helper.make_node("Add", [f"layer{i}.matmul", b], [f"layer{i}.out"]))
        elif value in OPERATORS:
            nodes.append(helper.make_node(OPERATORS[value], [x], [f"layer{i}.out"]))
        else:
            raise UserError(
                f"cannot export a {value} layer to ONNX (mobrl exports Linear and "
                f"{', '.join(OPERATORS)}). Export a policy of RLlib's default MLP modules."
            )
        x = f"layer{i}.out"
    nodes.append(helper.make_node("Identity", [x], [LOGITS]))
    return nodes, initializers


def _action_nodes(nvec: list[int] | None, nodes: list[Any], initializers: list[Any]) -> list[Any]:
    """Append the nodes from `LOGITS` to `ACTION` (ArgMax; per sub-action of MultiDiscrete
    actions `nvec`: Split, ArgMax each, Concat) and return the action's shape."""
    from onnx import helper, numpy_helper

    if nvec is None:
        nodes.append(helper.make_node("ArgMax", [LOGITS], [ACTION], axis=1, keepdims=0))
        return ["batch"]
    parts = [f"logits.part{j}" for j in range(len(nvec))]
    split = numpy_helper.from_array(np.asarray(nvec, "i8"), "logits.split")
    initializers.append(split)
    nodes.append(helper.make_node("Split", [LOGITS, split.name], parts, axis=1))
    for part in parts:
        nodes.append(helper.make_node("ArgMax", [part], [f"{part}.argmax"], axis=1))
    nodes.append(helper.make_node("Concat", [f"{p}.argmax" for p in parts], [ACTION], axis=1))
    return ["batch", len(nvec)]


def _graph(
    layers: list[tuple[str, Any]],
    nvec: list[int] | None,
    name: str,
    nodes: list[Any],
    initializers: list[Any],
    action_shape: list[Any],
) -> Any:
    """The graph of `nodes`: `INPUT` in, `LOGITS` and `ACTION` out, a dynamic batch."""
    from onnx import TensorProto, helper

    width = int(next(v for k, v in layers if k == "linear")[0].shape[1])
    logits_width = int(layers[-1][1][0].shape[0])
    return helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info(INPUT, TensorProto.FLOAT, ["batch", width])],
        [
            helper.make_tensor_value_info(LOGITS, TensorProto.FLOAT, ["batch", logits_width]),
            helper.make_tensor_value_info(ACTION, TensorProto.INT64, action_shape),
        ],
        initializers,
        doc_string=(
            f"{INPUT}: float32 [batch, {width}], one agent's observation per row; "
            f"{LOGITS}: the action logits; {ACTION}: the deterministic action (argmax"
            + (", per sub-action" if nvec is not None else "")
            + ")."
        ),
    )


def write(model: Any, path: Path) -> Path:
    """The model's bytes to `path` through a temporary file renamed into place (a reader
    sees no half-written model; a full disk is one line and leaves nothing)."""
    from mobrl.core.files import atomic_writer

    path = Path(path)
    with atomic_writer(path, binary=True) as f:
        f.write(model.SerializeToString())
    return path
