"""The analysis stage: statistics per point, comparisons, scaling laws,
diagnosis and verdicts, all derived from the store alone."""
