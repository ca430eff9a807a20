"""What runs on the stack: the demo of `make run` (`demo`), the verdict scenarios of `--scenario`
(`verdicts`), the reproduction of a recording (`reproduce`) and the chaos soak (`soak`)."""
