"""The machine under the experiment: its CPU topology (`topology`) and
the CPU sets chosen on it (`cpusets`)."""
