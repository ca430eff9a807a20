"""What `cre-fn` does besides serving a function: `doctor` (an install's health), `replay` (a recording posted
in order) and `parity` (a recorded stream's comparisons as a table)."""
