"""The six acts: each sets up, observes, asserts its claim from observed state, and reports timings."""
