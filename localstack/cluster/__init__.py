"""The cluster: etcd + kube-apiserver 1.20 on loopback (`apiserver`), the CRDs it installs (`crds`,
`fallback-crds/`), the webhook that enforces their CEL rules (`admission`, on `cel`), the stand-in
kubelet that serves pod logs (`kubelet`) and the pods of a TrainJob's attempt (`pods`)."""
