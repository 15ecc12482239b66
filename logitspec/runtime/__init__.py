"""Speed tricks applied to the model, invisible to the algorithm: the few-row linear kernel,
grouped tree attention, the in-place KV cache, the model thread, the frozen heap and the
converted-weight cache. Every decoder runs on them alike, so a race compares decoders.
The runtime imports nothing above it but logitspec.environment: the algorithm uses it, never
the other way round."""
from .. import environment

# The largest tree a pass may hold: the input limits' tree capacity (core/limits.py), and the
# row count up to which half precision runs on the row-invariant kernels. LOGITSPEC_CAPACITY
# overrides both.
MAX_TREE_ROWS = environment.CAPACITY.default

# The output head's first batch when nothing is timed (LOGITSPEC_MEASURE_CURVES=0), fixed so that
# every machine computes the same rows (SmolLM2's head times at 12 in float32 on an idle Xeon).
UNTIMED_HEAD_ROWS = 4


def measuring_allowed() -> bool:
    """LOGITSPEC_MEASURE_CURVES=0: time nothing that sizes a draft (no c(n), no head batch) and
    load no curve an earlier start stored; decoding starts from the default shapes, alike on every
    machine (a server that shares its cores with other timed work; the test run)."""
    return environment.MEASURE_CURVES.read()
