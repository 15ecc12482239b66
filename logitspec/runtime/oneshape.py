"""One shape on the CPU: half-precision products at one fixed row count R, exact by construction.

Torch's stock bfloat16 products (oneDNN; AMX on a Sapphire Rapids Xeon) pick their blocking
from the number of rows, so a tree node's row parts from the one-token pass at its position.
At one fixed row count they give a row the same bits wherever it sits (measured:
docs/performance.md). In this mode every linear layer, the output head included, pads a pass's
rows to R inside the product (R at a time where there are more) and slices the real rows back;
attention, norms and activations run on the real rows only, attention on the CPU's
row-invariant kernel (csrc/row_attention.cpp), which gives a row the same bits at any row count.

The mode is an alternative to the few-row kernel (runtime/linear.py) for the same promise, and
is used only where it is both row-invariant (checked bitwise at load on the model's own layer
shapes) and faster (timed at load): `choose_half_mode`. Where either fails the model keeps the
few-row kernel and `HalfMode.note` says why, in one line.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

# Row counts tried, smallest first: a larger R affords a larger tree in one pass, at a higher
# price for vanilla's one-token steps.
CANDIDATE_ROWS = (16, 32, 64)
KERNELS = ("prepacked", "stock")  # oneDNN's reordered bf16 weights first, where this CPU has them
HALF = (torch.bfloat16, torch.float16)
TIMING_ROUNDS = 2  # each product timed this many times, the fastest kept


class ShapedProduct:
    """x @ weight.T + bias computed R rows at a time, the rows zero-padded to a multiple of R,
    on torch's stock kernel or on oneDNN's weights prepacked for R rows (`packed`)."""

    def __init__(self, rows: int, packed: torch.Tensor | None = None) -> None:
        self.rows, self.packed = rows, packed

    def product(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        """One R-row product, x [R, d_in] -> [R, d_out]."""
        if self.packed is None:
            return F.linear(x, weight, bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, bias, "none", [], "")

    def __call__(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        n, r = flat.shape[0], self.rows
        padded = F.pad(flat, (0, 0, 0, -n % r))
        out = torch.cat([self.product(padded[i : i + r], weight, bias) for i in range(0, padded.shape[0], r)])
        return out[:n].reshape(*x.shape[:-1], out.shape[-1])


@dataclass(frozen=True)
class OneShape:
    """The mode's settings: the row count and the product kernel ("stock" or "prepacked")."""

    rows: int
    kernel: str = "stock"

    def words(self) -> str:
        return f"one shape, {self.rows} rows, {self.kernel} products"


@dataclass
class HalfMode:
    """How a half-precision CPU model's products stay exact: the few-row kernel ("kernels") or
    one shape, with the products' time of each mode as timed at load and why where it fell back."""

    mode: str = "kernels"  # "kernels" or OneShape.words()
    seconds: dict[str, float] = field(default_factory=dict)  # mode -> products of a vanilla and a tree pass
    note: str = ""  # one line for the CLI, the bench and the app

    def to_dict(self) -> dict:
        return {"mode": self.mode, "seconds": {m: round(s, 5) for m, s in self.seconds.items()}, "note": self.note}


def linear_layers(model) -> list[torch.nn.Linear]:
    """The model's linear layers (the output head among them), each once."""
    seen: dict[int, torch.nn.Linear] = {}
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            seen.setdefault(id(m), m)
    return list(seen.values())


def shapes_of(layers: list[torch.nn.Linear]) -> dict[tuple, tuple[torch.nn.Linear, int]]:
    """One layer of each (weight shape, dtype, has bias), with how many layers share it."""
    out: dict[tuple, tuple[torch.nn.Linear, int]] = {}
    for m in layers:
        key = (tuple(m.weight.shape), m.weight.dtype, m.bias is not None)
        out[key] = (out[key][0] if key in out else m, out.get(key, (m, 0))[1] + 1)
    return out


def shaped_product(layer: torch.nn.Linear, shape: OneShape) -> ShapedProduct | None:
    """The layer's product at `shape`; None where this torch or CPU has no prepacked kernel."""
    if shape.kernel == "stock":
        return ShapedProduct(shape.rows)
    try:
        packed = torch.ops.mkldnn._reorder_linear_weight(layer.weight.detach(), shape.rows)
        product = ShapedProduct(shape.rows, packed)
        product(torch.zeros(1, layer.weight.shape[1], dtype=layer.weight.dtype), layer.weight, layer.bias)
        return product
    except (RuntimeError, AttributeError):  # e.g. "bf16 path needs the cpu support avx_ne_convert or avx512_core"
        return None


@torch.inference_mode()
def row_invariant(layer: torch.nn.Linear, product: ShapedProduct, seed: int = 0) -> bool:
    """Bitwise, on this layer's weights: each row of an R-row product equals the same vector
    at another place of another R-row product (every row moved by one, and at row 0 of
    products of other rows); and the mode's results for 1, R/2 + 1, R and R + 1 real rows,
    sliced back, equal the rows of one full R-row product."""
    r, w, b = product.rows, layer.weight, layer.bias
    g = torch.Generator().manual_seed(seed)

    def rand(n: int) -> torch.Tensor:
        return torch.randn(n, w.shape[1], generator=g).to(w.dtype)

    x = rand(r)
    full = product.product(x, w, b)
    if not torch.equal(product.product(x.roll(1, 0), w, b), full.roll(1, 0)):
        return False
    for i in sorted({0, r // 2, r - 1}):
        other = rand(r)
        other[0] = x[i]
        if not torch.equal(product.product(other, w, b)[0], full[i]):
            return False
    if not all(torch.equal(product(x[:n], w, b), full[:n]) for n in sorted({1, r // 2 + 1, r})):
        return False
    return torch.equal(product(torch.cat([x, x[:1]]), w, b)[r], full[0])


def check_shape(model, shape: OneShape) -> str | None:
    """None if every layer shape of the model is row-invariant at `shape`, else why not."""
    for (dims, dtype, _), (layer, _) in shapes_of(linear_layers(model)).items():
        product = shaped_product(layer, shape)
        if product is None:
            return f"no {shape.kernel} {str(dtype).removeprefix('torch.')} products on this CPU"
        if not row_invariant(layer, product):
            return (f"{shape.kernel} products of {shape.rows} rows are not row-invariant here "
                    f"(a {dims[1]}x{dims[0]} layer)")
    return None


def use_one_shape(model, shape: OneShape | None) -> int:
    """Every linear layer's half-precision passes at `shape` (None: back to the few-row
    kernel); returns how many layers were set. Prepacked weights are made here, once."""
    from .linear import FewRowLinear, as_few_row_linear

    count = 0
    for layer in linear_layers(model):
        if shape is None:
            if isinstance(layer, FewRowLinear):
                layer.one_shape = None
            continue
        product = shaped_product(layer, shape)
        if product is None:
            raise ValueError(f"{shape.words()}: no such products on this CPU")
        if not isinstance(layer, FewRowLinear):
            as_few_row_linear(layer, None, None)
        layer.one_shape = product
        count += 1
    return count


def apply_half_mode(model, shape: OneShape | None, seconds: dict[str, float] | None = None) -> HalfMode:
    """Put the model in `shape` if its layers pass the bitwise check (else, or for None, on the
    few-row kernel), and say which mode runs."""
    seconds = seconds or {}
    if shape is not None:
        failed = check_shape(model, shape)
        if failed is None:
            use_one_shape(model, shape)
            return HalfMode(shape.words(), seconds, f"exact half precision: {shape.words()}{_times(seconds)}")
        use_one_shape(model, None)
        return HalfMode("kernels", seconds, f"exact half precision: the few-row kernel, since {failed}")
    use_one_shape(model, None)
    return HalfMode("kernels", seconds, f"exact half precision: the few-row kernel{_times(seconds)}")


def _times(seconds: dict[str, float]) -> str:
    if len(seconds) < 2:
        return ""
    return " (products of a vanilla pass and a tree pass, timed at load: " + ", ".join(
        f"{m} {s * 1e3:.1f} ms" for m, s in seconds.items()) + ")"


def products_seconds(shapes: dict, run, rows: int, budget: float = float("inf")) -> float:
    """Seconds of one pass's products at `rows` rows: each layer shape's fastest of
    TIMING_ROUNDS timings times its layer count, smallest shapes first; stops once past `budget`
    (the sum so far, a lower bound past the budget, is then returned)."""
    total = 0.0
    for layer, count in sorted(shapes.values(), key=lambda lc: lc[0].weight.numel()):
        x = torch.randn(rows, layer.weight.shape[1]).to(layer.weight.dtype)
        run(layer, x)  # a first call's allocations stay out of the timing
        best = float("inf")
        for _ in range(TIMING_ROUNDS):
            t0 = time.perf_counter()
            run(layer, x)
            best = min(best, time.perf_counter() - t0)
        total += count * best
        if total > budget:
            break
    return total


def _shape_runner(shape: OneShape):
    """(layer, x) -> the layer's product at `shape`, each layer's product made once; None where
    this CPU has no such products."""
    made: dict[int, ShapedProduct | None] = {}

    def run(layer: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
        if id(layer) not in made:
            made[id(layer)] = shaped_product(layer, shape)
        product = made[id(layer)]
        if product is None:
            raise ValueError(shape.kernel)
        return product(x, layer.weight, layer.bias)
    return run


@torch.inference_mode()
def choose_half_mode(model, rows: int, tree_rows: int) -> HalfMode:
    """Time the products of a vanilla pass and a tree pass in each mode, and run the model in the
    fastest mode that passes the bitwise check: the few-row kernel at 1 row and at the tree it
    decodes with (R rows, at most `tree_rows`: its cost tree's capacity on a CPU), against one
    shape at R = `rows`, or each of CANDIDATE_ROWS, on each of KERNELS (two R-row passes). A
    one-shape mode's timing stops once it is slower than the kernel's, so a CPU without fast
    half-precision products pays little."""
    from .fewrows import row_attention_kernel

    use_one_shape(model, None)
    if row_attention_kernel() is None:
        return HalfMode("kernels", {}, "half precision without one shape: no row-invariant attention kernel here")
    shapes = shapes_of(linear_layers(model))
    today = lambda layer, x: layer(x)  # noqa: E731 -- the layer's own forward: the few-row kernel
    one_row = products_seconds(shapes, today, 1)
    best: tuple[float, OneShape, float, float] | None = None  # (ratio, shape, one shape's s, kernel's s)
    for r in (rows,) if rows else CANDIDATE_ROWS:
        # The wider tree one shape affords earns more tokens a pass; not counted, so a pick of one
        # shape never slows vanilla's one-row passes by more than the tree passes gain.
        kernel_s = one_row + products_seconds(shapes, today, min(r, tree_rows))
        for kernel in KERNELS:
            shape = OneShape(r, kernel)
            try:
                shape_s = 2 * products_seconds(shapes, _shape_runner(shape), r, budget=kernel_s / 2)
            except ValueError:
                continue  # no such products here
            if best is None or shape_s / kernel_s < best[0]:
                best = (shape_s / kernel_s, shape, shape_s, kernel_s)
    if best is None:
        return HalfMode("kernels", {}, "exact half precision: the few-row kernel (no one-shape products here)")
    ratio, shape, shape_s, kernel_s = best
    # Past the kernel's time, the one-shape timing stopped early: its sum is a lower bound.
    seconds = {f"the few-row kernel at 1 and {min(shape.rows, tree_rows)} rows": kernel_s,
               shape.words() + (" (at least: timing stopped)" if ratio > 1 else ""): shape_s}
    return apply_half_mode(model, shape if ratio < 1 else None, seconds)
