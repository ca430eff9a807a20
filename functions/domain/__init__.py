"""CRE's words, shared by the functions: what CRE's Job controller would decide, as pure functions of what
was read, the settings and the time — the Job and its conditions, attempts and TrainJobs, launching, phases,
checkpoints, stalls, thresholds, grace, redelivery, Events, pods, measurements, alerts and CEL. Nothing here
performs I/O or imports the runtime's context, gateway, codec, server or HTTP client, nor any function
(import-linter contracts); a function's read reads, its decision calls these, the runtime applies the plan."""
