"""The event catalog of cre-functions: the public contract (SPEC §4).

`events` holds the CloudEvent types we consume and emit, pydantic models of the Kubernetes objects the
functions read, data models of every emitted event, the ApiServerSource envelope parser, JSON Schemas
and sample events. It imports nothing from `functions/`.
"""
