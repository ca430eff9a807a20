"""Knative Eventing on one machine: the Broker with the Triggers and delivery of `knative/base`
(`broker`), the ApiServerSources (`apisource`) and the Broker's chaos (`chaos`). The PingSource
stand-in is part of the stack's composition (`localstack.stack`)."""
