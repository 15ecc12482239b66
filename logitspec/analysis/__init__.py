"""Analysis of saved traces, with no model and no torch: what-if replays, what the drafts held,
tree budgets, where two runs part, race records, and the table of lanes."""
