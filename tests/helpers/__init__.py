"""Helpers shared by the test modules (no tests here): tiny models, prompts, GGUF files, the
app as a subprocess, trace and figure look-ups, browser pages and the command-line runs."""
