"""How a function runs: the CloudEvents codec and the HTTP server, the Kubernetes gateway and its reads, the
plans and their application, settings, logs, metrics, tracing, the HTTP client and the alert sinks, the tenant
CEL budget, and the dead-letter recorder. No module here knows a function by name."""
