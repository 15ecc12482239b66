"""Speed tricks applied to the model, invisible to the algorithm: the few-row linear kernel,
grouped tree attention, the in-place KV cache, the model thread, the frozen heap and the
converted-weight cache. Every decoder runs on them alike, so a race compares decoders.
The runtime imports nothing above it: the algorithm uses it, never the other way round."""

# The largest tree a pass may hold: the input limits' tree capacity (core/limits.py), and the
# row count up to which half precision runs on the row-invariant kernels. LOGITSPEC_CAPACITY
# overrides both.
MAX_TREE_ROWS = 256
