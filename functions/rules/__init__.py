"""Pure rules: what CRE's Job controller would decide, as functions of what was read, the settings
and the time. Nothing here performs I/O or imports the context, the gateway, the codec, the server
or the HTTP client (an import-linter contract); the handlers read, call these, and apply the plans."""
