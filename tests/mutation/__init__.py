"""`make mutation`: the API server it shares with every mutant's tests, the trampoline hits of the
functions served in child processes, and the score report."""
