"""Prometheus scraping the served functions with the rules of `knative/components/monitoring`
(`prometheus`) and Alertmanager receiving the `alert` function's alerts (`alertmanager`)."""
