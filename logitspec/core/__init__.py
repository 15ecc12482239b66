"""The paper's algorithm: settings, the trace, speculation, retrieval, the draft tree, verification,
acceptance (sampling) and the decode loop. Imports nothing above it but the runtime."""
