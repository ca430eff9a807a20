"""cre-functions: the CRE Job controller's workload logic as stateless Knative functions."""
