"""Speed tricks applied to the model, invisible to the algorithm: the few-row linear kernel,
grouped tree attention, the in-place KV cache, the model thread, the frozen heap and the
converted-weight cache. Every decoder runs on them alike, so a race compares decoders."""
