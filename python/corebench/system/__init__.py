"""The machine under the experiment: its CPU topology and the CPU sets
chosen on it (`topology`); what `system check` warns of and `tune`
fixes, the clock measured during runs and the facts stored with an
experiment (`check`)."""
