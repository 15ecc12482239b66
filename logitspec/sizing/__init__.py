"""Tree sizing on the hardware at hand: the cost of a pass of n tokens, c(n), measured and
calibrated, and the cost-aware tree that weighs it against acceptance."""
