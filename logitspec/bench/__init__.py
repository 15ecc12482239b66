"""The benchmark: every decoder over Spec-Bench questions, timed side by side (`python -m logitspec.bench`)."""
