"""The burst profile's summary (`localstack.bench.apiprofile.shares`) read from `go tool pprof -top -cum` text."""

from __future__ import annotations

from localstack.bench.apiprofile import shares

VENDOR = "k8s.io/kubernetes/vendor/k8s.io/apiserver/pkg"
CRDS = "k8s.io/kubernetes/vendor/k8s.io/apiextensions-apiserver/pkg"
TOP = f"""File: kube-apiserver
Type: cpu
Duration: 30.09s, Total samples = 16.63s (55.27%)
      flat  flat%   sum%        cum   cum%
         0     0%     0%      4.54s 27.30%  {CRDS}/registry/customresource.(*StatusREST).Update
         0     0%     0%      4.60s 27.66%  {VENDOR}/registry/generic/registry.(*Store).Update
         0     0% 11.91%      0.94s  5.65%  {VENDOR}/endpoints/handlers.ListResource.func1
         0     0% 19.60%      0.74s  4.45%  {VENDOR}/endpoints/handlers.serveWatch
         0     0% 20.44%      0.65s  3.91%  {VENDOR}/registry/generic/registry.(*Store).Get
     0.01s  0.06% 20.50%      0.60s  3.61%  {VENDOR}/registry/generic/registry.(*Store).GetList
     1.35s  8.12% 28.62%      2.58s 15.51%  runtime.gcBgMarkWorker
"""


def test_each_request_path_gets_its_own_share_and_a_list_excludes_the_watches_its_handler_serves() -> None:
    found = dict(shares(TOP))
    assert found["status writes (…/status)"] == 27.30
    assert found["updates and patches, status writes included"] == 27.66
    assert found["GETs"] == 3.91  # not (*Store).GetList
    assert round(found["LISTs"], 2) == 1.20  # 5.65 % of ListResource less the 4.45 % of its watches
    assert found["watches: events sent"] == 4.45
    assert found["garbage collection"] == 15.51
    assert found["creates"] == 0.0  # none in the profile


def test_an_empty_or_unreadable_profile_gives_zeros_not_an_error() -> None:
    assert {share for _, share in shares("")} == {0.0}
    assert {share for _, share in shares("flat flat% sum% cum cum%\nnot a row")} == {0.0}
