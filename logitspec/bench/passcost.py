"""What a forward pass costs, beside what it must cost: c(n) at a fixed context for each dtype
asked, and the memory floor of a one-token pass (logitspec.runtime.bandwidth)."""
from __future__ import annotations

from dataclasses import dataclass

# The context every dtype's curve is timed at, so that curves and floors compare.
CONTEXT = 512
MAX_N = 64


@dataclass
class PassCost:
    """One dtype's curve and floor."""

    dtype: str
    curve: dict  # CostCurve.to_dict()
    floor: dict  # MemoryFloor.to_dict()

    def c(self, n: int) -> float:
        from ..sizing.curve import interp_sorted

        return interp_sorted([n], self.curve["sizes"], self.curve["seconds"])[0]

    def to_dict(self) -> dict:
        c1 = self.c(1)
        return {"dtype": self.dtype, "context_len": CONTEXT, "curve": self.curve, "memory_floor": self.floor,
                "c1_ms": round(c1 * 1e3, 3), "c1_over_floor": round(c1 * 1e3 / self.floor["floor_ms"], 3),
                "c16_over_c1": round(self.c(16) / c1, 3), "c64_over_c1": round(self.c(MAX_N) / c1, 3)}


def pass_cost(lm) -> PassCost:
    """c(n) for n = 1..64 over a 512-token cache, and the floor on the same threads, of a loaded
    CPU model."""
    from ..sizing.costcurve import measure_cost_curve
    from ..runtime.bandwidth import memory_floor

    curve = measure_cost_curve(lm.model, context_len=CONTEXT, max_n=MAX_N)
    return PassCost(lm.dtype, curve.to_dict(), memory_floor(lm.model, curve.threads).to_dict())


def pass_costs(lm, name: str, device: str, dtypes: list[str]) -> list[dict]:
    """The pass cost of `lm` and of the same model loaded in each other dtype of `dtypes`."""
    from ..models import load_model

    out = []
    for dtype in dtypes:
        other = lm if dtype == lm.dtype else load_model(name, device, dtype)
        out.append(pass_cost(other).to_dict())
        del other  # one extra copy of the weights at a time
    return out


def describe(entry: dict) -> str:
    """One line: c(1) against the floor, and the curve's flatness."""
    f = entry["memory_floor"]
    return (f"{entry['dtype']}: c(1) {entry['c1_ms']:.1f} ms = {entry['c1_over_floor']:.2f}x the memory floor "
            f"({f['weight_bytes'] / 1e6:.0f} MB of weights at {f['read_gb_per_s']:.1f} GB/s = {f['floor_ms']:.1f} ms, "
            f"{f['threads']} threads); c(16)/c(1) {entry['c16_over_c1']:.2f}, c(64)/c(1) {entry['c64_over_c1']:.2f} "
            f"(context {entry['context_len']})")
