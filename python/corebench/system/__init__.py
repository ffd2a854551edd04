"""The machine under the experiment: its CPU topology and the CPU sets
chosen on it (`topology`), its clock (`clock`), what `system check` warns
of (`check`), and the facts stored with an experiment (`facts`)."""
