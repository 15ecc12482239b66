"""The paper's algorithm: settings, the trace, speculation, retrieval, the draft tree, verification,
acceptance (sampling) and the decode loop. It imports only the runtime, below it."""
