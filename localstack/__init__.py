"""A local stack for tests and `make run`: a real kube-apiserver + etcd on loopback, the upstream
CRDs, and (later) every function served over HTTP. Not part of what is deployed to a cluster."""
