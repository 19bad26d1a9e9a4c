"""The GPTQ kernel as a torch op and an ``nn.Linear`` replacement.

    from solutions.gptq.layer import GPTQLinear, quantize_linears
    layer = GPTQLinear.from_gptq(layer_tensors, quantize_config)     # an AutoGPTQ layer
    model = quantize_linears(model, group_size=128)                   # every nn.Linear, quantized here

``torch.ops.gptq.matmul`` is a ``torch.library`` custom op with a fake (meta) implementation, so
``torch.compile`` (``fullgraph=True``, ``mode="reduce-overhead"``) keeps it in one graph. In eager
mode :class:`GPTQLinear` calls :func:`~solutions.gptq.matmul.gptq_matmul` directly: the custom-op
dispatcher costs several us of CPU per call, which is what the cached launch plans save.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

import torch
from torch import Tensor, nn

from solutions.gptq.loader import GPTQWeight, dequantize, load_gptq_layer
from solutions.gptq.matmul import gptq_matmul
from solutions.gptq.quantize import quantize_rtn

# The op gets a weight's tensors, not the GPTQWeight that holds its launch plans. Registered weights
# (every GPTQLinear registers its own) are found again by the tensors' addresses. Weak values: an
# entry lives as long as its owner keeps the weight, and so its tensors (no address can be reused
# meanwhile); an unregistered weight is rebuilt, and planned, on every call.
_WEIGHTS: weakref.WeakValueDictionary[tuple, GPTQWeight] = weakref.WeakValueDictionary()


def _key(tensors: tuple, group_size: int, zero_offset: int) -> tuple:
    # get_device() and torch.Size: the cheapest hashable forms of a tensor's device and shape.
    return tuple(None if t is None else (t.data_ptr(), t.get_device(), t.shape) for t in tensors) + (
        group_size, zero_offset)


def register_weight(weight: GPTQWeight) -> GPTQWeight:
    """Let ``torch.ops.gptq.matmul`` reuse ``weight``'s launch plans while the caller keeps ``weight``."""
    _WEIGHTS[_key(op_args(weight)[:7], weight.group_size, weight.zero_offset)] = weight
    return weight


def _weight_from_tensors(qweight: Tensor | None, qweight_mma: Tensor | None, qzeros: Tensor, scales: Tensor,
                         g_idx: Tensor | None, a_perm: Tensor | None, bias: Tensor | None, group_size: int,
                         zero_offset: int) -> GPTQWeight:
    weight = _WEIGHTS.get(_key((qweight, qweight_mma, qzeros, scales, g_idx, a_perm, bias), group_size, zero_offset))
    if weight is None:
        weight = GPTQWeight(qweight=qweight, qzeros=qzeros, scales=scales, group_size=group_size,
                            zero_offset=zero_offset, g_idx=g_idx, a_perm=a_perm, bias=bias, qweight_mma=qweight_mma)
    return weight


@torch.library.custom_op("gptq::matmul", mutates_args=())
def gptq_matmul_op(a: Tensor, qweight: Tensor | None, qweight_mma: Tensor | None, qzeros: Tensor, scales: Tensor,
                   g_idx: Tensor | None, a_perm: Tensor | None, bias: Tensor | None, group_size: int,
                   zero_offset: int) -> Tensor:
    """``a @ W (+ bias)`` for a GPTQ weight given by its tensors (see :class:`GPTQWeight`)."""
    weight = _weight_from_tensors(qweight, qweight_mma, qzeros, scales, g_idx, a_perm, bias, group_size,
                                  zero_offset)
    return gptq_matmul(a, weight)


@gptq_matmul_op.register_fake
def _(a, qweight, qweight_mma, qzeros, scales, g_idx, a_perm, bias, group_size, zero_offset):
    k = qweight.shape[0] * 8 if qweight is not None else qweight_mma.shape[1] * 128
    torch._check(a.shape[-1] == k, lambda: f"a has {a.shape[-1]} columns, the weight has K={k} rows")
    torch._check(a.dtype == torch.float16, lambda: f"a must be fp16, got {a.dtype}")
    return a.new_empty((*a.shape[:-1], scales.shape[1]))


def op_args(weight: GPTQWeight) -> tuple:
    """The arguments after A of ``torch.ops.gptq.matmul`` for ``weight``: its tensors, G and the zero offset."""
    return (weight.qweight, weight.qweight_mma, weight.qzeros, weight.scales, weight.g_idx, weight.a_perm,
            weight.bias, weight.group_size, weight.zero_offset)


class GPTQLinear(nn.Module):
    """``y = x @ W (+ bias)`` with W stored as 4-bit GPTQ; a drop-in for ``nn.Linear(K, N)`` in fp16.

    The weight's tensors are buffers (they move with ``.to()`` / ``.cuda()`` and are in the
    ``state_dict``). Eager calls go straight to the kernel's cached launch plan; under
    ``torch.compile`` the layer calls the custom op ``torch.ops.gptq.matmul``.
    """

    _TENSORS = ("qweight", "qweight_mma", "qzeros", "scales", "g_idx", "a_perm", "bias")

    def __init__(self, weight: GPTQWeight) -> None:
        super().__init__()
        self.in_features, self.out_features = weight.k, weight.n
        self.group_size, self.zero_offset = weight.group_size, weight.zero_offset
        for name in self._TENSORS:
            self.register_buffer(name, getattr(weight, name))
        self._weight: GPTQWeight | None = None
        self.gptq_weight()  # registered now, so that the compiled op finds its plans from the first call

    @classmethod
    def from_gptq(cls, tensors: dict[str, Tensor], quantize_config: dict, **load_options) -> GPTQLinear:
        """From an AutoGPTQ layer's tensors (``qweight``, ``qzeros``, ``scales``, ``g_idx``, ``bias``)
        and the checkpoint's quantize config (see :func:`solutions.gptq.loader.load_gptq_layer`)."""
        return cls(load_gptq_layer(tensors, quantize_config, **load_options))

    @classmethod
    def from_linear(cls, linear: nn.Linear, group_size: int = 128, *, act_order: bool = False,
                    checkpoint_format: str = "gptq", **load_options) -> GPTQLinear:
        """Quantize an ``nn.Linear`` with :func:`solutions.gptq.quantize.quantize_rtn` (round to nearest)."""
        layer = quantize_rtn(linear.weight.detach().t(), group_size, act_order=act_order,
                             checkpoint_format=checkpoint_format)
        tensors = dict(layer.tensors)
        if linear.bias is not None:
            tensors["bias"] = linear.bias.detach().half()
        return cls.from_gptq(tensors, layer.quantize_config, **load_options)

    def gptq_weight(self) -> GPTQWeight:
        """The GPTQWeight over this module's current buffers (rebuilt when a buffer was replaced or moved)."""
        w = self._weight
        if w is None or any(getattr(w, name) is not getattr(self, name) for name in self._TENSORS):
            w = GPTQWeight(qweight=self.qweight, qzeros=self.qzeros, scales=self.scales, group_size=self.group_size,
                           zero_offset=self.zero_offset, g_idx=self.g_idx, a_perm=self.a_perm, bias=self.bias,
                           qweight_mma=self.qweight_mma)
            self._weight = register_weight(w)
        return w

    def dequantized_weight(self, dtype: torch.dtype = torch.float16) -> Tensor:
        """W as an ``nn.Linear`` weight: (N, K) in ``dtype``."""
        return dequantize(self.gptq_weight(), torch.float32).t().to(dtype)

    def _apply(self, fn, recurse=True):  # .to(), .cuda(), .half()...: new buffers, so a new GPTQWeight
        module = super()._apply(fn, recurse)
        self.reset()
        self.gptq_weight()
        return module

    def forward(self, x: Tensor) -> Tensor:
        if torch.compiler.is_compiling():
            # Plain buffer reads only (traceable); the op finds this module's registered weight.
            return torch.ops.gptq.matmul(x, self.qweight, self.qweight_mma, self.qzeros, self.scales, self.g_idx,
                                         self.a_perm, self.bias, self.group_size, self.zero_offset)
        # The cached GPTQWeight (and its launch plans) is only checked against the buffers when it
        # is rebuilt: after assigning a buffer directly, call reset().
        w = self._weight
        return gptq_matmul(x, w if w is not None else self.gptq_weight())

    def __getstate__(self) -> dict:  # deepcopy / pickle: not the plans (compiled kernels), the buffers only
        state = self.__dict__.copy()
        state["_weight"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.gptq_weight()

    def reset(self) -> None:
        """Forget the cached weight and launch plans (after assigning new tensors to the buffers)."""
        self._weight = None

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, group_size={self.group_size}, "
                f"bias={self.bias is not None}")


def _replace(model: nn.Module, make, skip: Iterable[str]) -> nn.Module:
    skip = tuple(skip)
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if any(full == s or full.endswith("." + s) or child_name == s for s in skip):
                continue
            new = make(child)
            if new is not None:
                setattr(module, child_name, new)
    return model


def quantize_linears(model: nn.Module, group_size: int = 128, *, skip: Iterable[str] = ("lm_head",),
                     act_order: bool = False, checkpoint_format: str = "gptq", **load_options) -> nn.Module:
    """Replace every ``nn.Linear`` of ``model`` (in place) by a :class:`GPTQLinear` of its weight,
    quantized here; ``skip`` names modules to leave alone (by name or dotted-path suffix). Layers
    whose sizes the format cannot hold (K or N not a multiple of 8, K not a multiple of the group
    size) stay ``nn.Linear``. Returns ``model``."""

    def make(child: nn.Module) -> GPTQLinear | None:
        if type(child) is not nn.Linear:
            return None
        k, n = child.in_features, child.out_features
        g = k if group_size == -1 else group_size
        if k % 8 or n % 8 or k % g:
            return None
        new = GPTQLinear.from_linear(child, group_size, act_order=act_order, checkpoint_format=checkpoint_format,
                                     **load_options)
        return new.to(child.weight.device)

    return _replace(model, make, skip)


def dequantize_linears(model: nn.Module) -> nn.Module:
    """Replace every :class:`GPTQLinear` of ``model`` (in place) by an fp16 ``nn.Linear`` holding its
    dequantized weight: the reference that a quantized model must match. Returns ``model``."""

    def make(child: nn.Module) -> nn.Linear | None:
        if not isinstance(child, GPTQLinear):
            return None
        linear = nn.Linear(child.in_features, child.out_features, bias=child.bias is not None,
                           device=child.scales.device, dtype=torch.float16)
        with torch.no_grad():
            linear.weight.copy_(child.dequantized_weight())
            if child.bias is not None:
                linear.bias.copy_(child.bias)
        return linear

    return _replace(model, make, ())
