"""The local stack behind the tests, `make run` and `make bench`: a real kube-apiserver + etcd on
loopback with CRDs and RBAC, every function served over HTTP, Knative's Broker and sources, a Trainer
simulator, Prometheus and Alertmanager. Not part of what is deployed to a cluster; the map of its
packages is `localstack/README.md`."""
