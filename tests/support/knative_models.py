"""Project-written checks of the Knative kinds `knative/` uses: pydantic models of the fields we set,
with unknown fields forbidden (a typo is an error, not a silently ignored field)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OneOf(Strict):
    """A union in Kubernetes' manner: exactly one of the fields `one_of` names is set."""

    one_of: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def exactly_one(self) -> Self:
        assert sum(getattr(self, field) is not None for field in self.one_of) == 1, f"exactly one of {self.one_of}"
        return self


class Meta(Strict):
    name: str
    namespace: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class KRef(Strict):
    apiVersion: str
    kind: str
    name: str
    namespace: str | None = None


class Destination(Strict):
    ref: KRef | None = None
    uri: str | None = None
    audience: str | None = None


class Delivery(Strict):
    retry: int = Field(ge=0)
    backoffPolicy: Literal["exponential", "linear"]
    backoffDelay: str = Field(pattern=r"^PT[0-9.]+S$")
    timeout: str | None = Field(default=None, pattern=r"^PT[0-9.]+S$")
    deadLetterSink: Destination


class EnvVar(Strict):
    name: str
    value: str


class VolumeMount(Strict):
    name: str
    mountPath: str = Field(pattern="^/")
    readOnly: bool = False


class ClaimSource(Strict):
    claimName: str
    readOnly: bool = False


class TokenProjection(Strict):
    audience: str
    expirationSeconds: int = Field(ge=600)
    path: str = Field(pattern="^[^/]")


class ProjectedSource(Strict):
    serviceAccountToken: TokenProjection


class Projected(Strict):
    sources: list[ProjectedSource] = Field(min_length=1)


class Volume(OneOf):
    """The volume types Knative Serving allows that `knative/` uses: a PersistentVolumeClaim (behind
    the `kubernetes.podspec-persistent-volume-claim` feature flag), or a projected ServiceAccount token."""

    one_of = ("persistentVolumeClaim", "projected")
    name: str
    persistentVolumeClaim: ClaimSource | None = None
    projected: Projected | None = None


class Container(Strict):
    name: str
    image: str
    args: list[str] | None = None
    env: list[EnvVar]
    envFrom: list[dict[str, Any]]
    ports: list[dict[str, int]]
    resources: dict[str, dict[str, str]]
    securityContext: dict[str, Any]
    volumeMounts: list[VolumeMount] | None = None


class PodSecurityContext(Strict):
    """Behind the `kubernetes.podspec-securitycontext` feature flag (off by default)."""

    fsGroup: int = Field(ge=0)


class RevisionSpec(Strict):
    serviceAccountName: str | None = None
    securityContext: PodSecurityContext | None = None
    volumes: list[Volume] | None = None
    containerConcurrency: int = Field(ge=0, le=1000)
    timeoutSeconds: int = Field(gt=0)
    containers: list[Container] = Field(min_length=1, max_length=1)


class RevisionTemplate(Strict):
    metadata: dict[str, Any]
    spec: RevisionSpec


class ServiceSpec(Strict):
    template: RevisionTemplate


class KnativeService(Strict):
    apiVersion: Literal["serving.knative.dev/v1"]
    kind: Literal["Service"]
    metadata: Meta
    spec: ServiceSpec


class BrokerSpec(Strict):
    delivery: Delivery
    config: KRef | None = None


class Broker(Strict):
    apiVersion: Literal["eventing.knative.dev/v1"]
    kind: Literal["Broker"]
    metadata: Meta
    spec: BrokerSpec


Dialect = Literal["exact", "prefix", "suffix", "all", "any", "not", "cesql"]


class TriggerSpec(Strict):
    broker: str
    filters: list[dict[Dialect, Any]] = Field(min_length=1)
    subscriber: Destination
    delivery: Delivery


class Trigger(Strict):
    apiVersion: Literal["eventing.knative.dev/v1"]
    kind: Literal["Trigger"]
    metadata: Meta
    spec: TriggerSpec


class SelectorRequirement(Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)


class Selector(Strict):
    matchLabels: dict[str, str] = Field(default_factory=dict)
    matchExpressions: list[SelectorRequirement] = Field(default_factory=list)


class ApiResource(Strict):
    apiVersion: str
    kind: str
    selector: Selector | None = None


class ApiServerSourceSpec(Strict):
    mode: Literal["Resource", "Reference"]
    serviceAccountName: str
    namespaceSelector: dict[str, Any]
    resources: list[ApiResource] = Field(min_length=1)
    sink: Destination


class ApiServerSource(Strict):
    apiVersion: Literal["sources.knative.dev/v1"]
    kind: Literal["ApiServerSource"]
    metadata: Meta
    spec: ApiServerSourceSpec


class PingSourceSpec(Strict):
    schedule: str = Field(pattern=r"^(\S+\s+){4}\S+$")
    contentType: str
    data: str
    sink: Destination


class PingSource(Strict):
    apiVersion: Literal["sources.knative.dev/v1"]
    kind: Literal["PingSource"]
    metadata: Meta
    spec: PingSourceSpec


class SinkBindingSpec(Strict):
    subject: KRef
    sink: Destination


class SinkBinding(Strict):
    apiVersion: Literal["sources.knative.dev/v1"]
    kind: Literal["SinkBinding"]
    metadata: Meta
    spec: SinkBindingSpec


class PolicyFrom(OneOf):
    one_of = ("ref", "sub")
    ref: KRef | None = None
    sub: str | None = Field(default=None, pattern=r"^[^*]*\*?$")
    """A ServiceAccount's username; `*` only at the end (a prefix)."""


class PolicyTo(Strict):
    ref: KRef


class EventPolicySpec(Strict):
    to: list[PolicyTo] = Field(min_length=1)
    from_: list[PolicyFrom] = Field(alias="from", min_length=1)


class EventPolicy(Strict):
    """eventing.knative.dev/v1alpha1 EventPolicy (its CRD is not among the upstream copies): what Knative's
    webhook checks of the fields we set."""

    apiVersion: Literal["eventing.knative.dev/v1alpha1"]
    kind: Literal["EventPolicy"]
    metadata: Meta
    spec: EventPolicySpec


KNATIVE_MODELS: dict[str, type[Strict]] = {
    "serving.knative.dev/v1/Service": KnativeService,
    "eventing.knative.dev/v1/Broker": Broker,
    "eventing.knative.dev/v1/Trigger": Trigger,
    "sources.knative.dev/v1/ApiServerSource": ApiServerSource,
    "sources.knative.dev/v1/PingSource": PingSource,
    "sources.knative.dev/v1/SinkBinding": SinkBinding,
    "eventing.knative.dev/v1alpha1/EventPolicy": EventPolicy,
}
