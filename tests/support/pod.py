"""A Knative Service's pod (or a Deployment's) as the cluster would run it, reproduced without a container engine.

A container engine cannot run in every place the suite runs, and the image's base cannot always be pulled;
what a pod does to the process can be done with util-linux alone (`unshare`, `mount`, `chroot`, `setpriv`),
as root, in a private mount and PID namespace: a read-only root holding the image's filesystem, `/proc`, a
`/dev` and a 64 MiB `/dev/shm` as a container runtime gives them, writable only the volumes the Service
declares, the ServiceAccount's token, and the container's process, environment, user and groups, with no
capabilities. Not reproduced: the network namespace (the pod's port is a free port of the host), seccomp,
cgroup limits; a securityContext other than the one reproduced here is refused rather than run differently.
What each part reproduces: docs/development.md#how-the-suite-runs-what-is-shipped.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localstack.processes import spawn

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SHM_SIZE = "64m"  # what containerd and CRI-O give a pod's /dev/shm
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
IMAGE_PATH = "/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"  # the python base image's PATH
REPRODUCED_SECURITY = {"runAsNonRoot": True, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                       "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}


@dataclass(frozen=True)
class Image:
    """What the Dockerfile's last stage gives a container: ENV, WORKDIR, USER, ENTRYPOINT and CMD."""

    env: Mapping[str, str]
    workdir: str
    user: int
    user_name: str
    entrypoint: Sequence[str]
    cmd: Sequence[str]


def read_dockerfile(path: Path) -> Image:
    lines = path.read_text().splitlines()
    last = max(i for i, line in enumerate(lines) if line.startswith("FROM "))
    env: dict[str, str] = {}
    workdir, user, entrypoint, cmd = "/", 0, [], []
    names = {0: "root"}
    for line in lines[last:]:
        word, _, rest = line.partition(" ")
        if word == "ENV":
            env.update(pair.split("=", 1) for pair in shlex.split(rest))
        elif word == "WORKDIR":
            workdir = rest.strip()
        elif word == "USER":
            user = int(rest.strip())
        elif word == "ENTRYPOINT":
            entrypoint = json.loads(rest)
        elif word == "CMD":
            cmd = json.loads(rest)
        elif word == "RUN" and (made := re.search(r"useradd --uid (\d+) .* (\S+)$", rest)):
            names[int(made[1])] = made[2]
    return Image(env, workdir, user, names[user], entrypoint, cmd)


@dataclass(frozen=True)
class Volume:
    path: str
    tmpfs: str | None = None  # tmpfs mount options, or
    source: Path | None = None  # a host directory bound read-only


@dataclass(frozen=True)
class Pod:
    """One container of a Service's pod: what runs, as whom, where, with which writable places."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    workdir: str
    uid: int
    gid: int
    groups: Sequence[int]
    volumes: Sequence[Volume]


@dataclass(frozen=True)
class Installed:
    """Where the image's Python and the packages the Dockerfile installs are on this machine (in the
    image, all under /usr/local): this Python and its environment, and the wheel installed into `site`
    (`pip install --target`, its scripts in `site/bin`)."""

    site: Path

    @property
    def dirs(self) -> list[Path]:
        return sorted({Path(sys.base_prefix), Path(sys.prefix), self.site})

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": f"{self.site}/bin:{sys.prefix}/bin:{IMAGE_PATH}", "PYTHONPATH": str(self.site)}


def pod_of(service: dict[str, Any], docs: Sequence[dict[str, Any]], image: Image, installed: Installed,
           port: int, token_dir: Path, kube_port: int) -> Pod:
    """The pod Knative makes of `service` (a Deployment's pod when it is one; rendered, with the other rendered
    `docs`) from `image`, its container port served on the host's `port`, its ServiceAccount's files in
    `token_dir`, the API server on the loopback's `kube_port`."""
    spec = service["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    security = container.get("securityContext", {})
    refused = {k: v for k, v in security.items() if k not in ("runAsUser", "runAsGroup")
               and REPRODUCED_SECURITY.get(k) != v}
    assert not refused and set(REPRODUCED_SECURITY) <= set(security), f"not reproduced: {security}"
    (declared,) = (p["containerPort"] for p in container["ports"])
    name = service["metadata"]["name"]
    if container.get("command"):
        argv = [*container["command"], *container.get("args", [])]
    else:
        argv = [*image.entrypoint, *(container.get("args") or image.cmd)]
    argv = [str(port) if arg == str(declared) else arg for arg in argv]
    uid = security.get("runAsUser", image.user)
    assert uid != 0, f"{name}: runAsNonRoot, yet its user is root"
    fs_group = spec.get("securityContext", {}).get("fsGroup")
    volumes = [claim_or_scratch(spec, mount, fs_group, token_dir) for mount in container.get("volumeMounts", [])]
    if spec.get("automountServiceAccountToken", True):
        volumes.append(Volume(SERVICE_ACCOUNT_DIR, source=token_dir))
    knative = service["apiVersion"].startswith("serving.knative.dev/")
    set_by_knative = {"PORT": str(port), "K_SERVICE": name, "K_CONFIGURATION": name,
                      "K_REVISION": f"{name}-00001"} if knative else {}
    env = {**installed.env, "HOSTNAME": f"{name}-00001-deployment" if knative else f"{name}-5d8f7c9b4-x2x7q",
           "HOME": f"/home/{image.user_name}",
           **image.env, **env_from(container, docs), **{e["name"]: e["value"] for e in container.get("env", [])},
           **set_by_knative, "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(kube_port)}
    return Pod(name, argv, env, container.get("workingDir", image.workdir), uid, security.get("runAsGroup", uid),
               [fs_group] if fs_group is not None else [], volumes)


def env_from(container: dict[str, Any], docs: Sequence[dict[str, Any]]) -> dict[str, str]:
    found: dict[str, str] = {}
    maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            found.update(maps[source["configMapRef"]["name"]]["data"])
        else:  # a Secret the manifests leave to the operator (the alert sinks): absent here
            assert source["secretRef"].get("optional"), f"no stand-in for {source}"
    return found


def claim_or_scratch(spec: dict[str, Any], mount: dict[str, Any], fs_group: int | None, token_dir: Path) -> Volume:
    """A tmpfs where the kubelet would mount an emptyDir (world-writable) or a claim (root's, and its
    group `fsGroup`'s with the setgid bit when set); the ServiceAccount's files, read-only, where it
    would project the account's token (as `token`)."""
    (volume,) = (v for v in spec.get("volumes", []) if v["name"] == mount["name"])
    if "projected" in volume:
        paths = [s["serviceAccountToken"]["path"] for s in volume["projected"]["sources"]]
        assert paths == ["token"], f"no stand-in for volume {volume}"
        return Volume(mount["mountPath"], source=token_dir)
    if "emptyDir" in volume:
        size = volume["emptyDir"].get("sizeLimit", "64Mi").removesuffix("i").lower()
        return Volume(mount["mountPath"], tmpfs=f"mode=777,size={size}")
    assert "persistentVolumeClaim" in volume, f"no stand-in for volume {volume}"
    owner = f"mode=2775,gid={fs_group}" if fs_group is not None else "mode=755"
    return Volume(mount["mountPath"], tmpfs=f"{owner},size=64m")


def script(pod: Pod, root: Path, binds: Sequence[Path], etc: Path) -> str:
    """The shell steps that build the pod's root at `root` (an empty directory) and exec the container's
    process in it. `binds`: the host directories the image's Python and packages live in; `etc`: the
    image's `passwd` and `group`."""
    q = shlex.quote
    r = q(str(root))
    dirs = ["usr", "etc", "proc", "dev", "tmp", "var/tmp", pod.workdir, *(str(b) for b in binds),
            *(v.path for v in pod.volumes)]
    steps = [f"mount -t tmpfs -o mode=755 pod-root {r}",
             *(f"mkdir -p {r}/{q(d.lstrip('/'))}" for d in dirs),
             f"chmod 1777 {r}/tmp {r}/var/tmp",
             *(f"ln -s {q(os.readlink(f'/{link}'))} {r}/{link}" for link in ("bin", "sbin", "lib", "lib64")
               if os.path.islink(f"/{link}")),
             *(f"mount --bind -o ro {q(str(b))} {r}{q(str(b))}" for b in (Path("/usr"), Path("/etc"), *binds)),
             *(f"mount --bind -o ro {q(str(etc / f))} {r}/etc/{f}" for f in ("passwd", "group")),
             f"mount -t proc proc {r}/proc",
             f"mount -t tmpfs -o mode=755,nosuid pod-dev {r}/dev",
             *(f"touch {r}/dev/{d} && mount --bind /dev/{d} {r}/dev/{d}" for d in DEVICES),
             *(f"ln -s /proc/self/fd{tail} {r}/dev/{link}"
               for link, tail in (("fd", ""), ("stdin", "/0"), ("stdout", "/1"), ("stderr", "/2"))),
             f"mkdir {r}/dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev,size={SHM_SIZE} pod-shm {r}/dev/shm"]
    for volume in pod.volumes:
        target = f"{r}{q(volume.path)}"
        steps.append(f"mount --bind -o ro {q(str(volume.source))} {target}" if volume.source
                     else f"mount -t tmpfs -o nosuid,nodev,{volume.tmpfs} pod-volume {target}")
    steps.append(f"mount -o remount,ro {r}")
    groups = ["--groups", ",".join(map(str, pod.groups))] if pod.groups else ["--clear-groups"]
    process = ["chroot", str(root), "setpriv", "--reuid", str(pod.uid), "--regid", str(pod.gid), *groups,
               "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--pdeathsig", "KILL",
               "env", "-i", "-C", pod.workdir, *(f"{k}={v}" for k, v in pod.env.items()), *pod.argv]
    return "\n".join(["set -eu", *steps, f"exec {shlex.join(process)}"])


def image_etc(image: Image, into: Path) -> Path:
    """The host's `passwd` and `group` with the image's user (`useradd` gives it a group of its own)."""
    into.mkdir()
    (into / "passwd").write_text(Path("/etc/passwd").read_text()
                                 + f"{image.user_name}:x:{image.user}:{image.user}::/home/{image.user_name}"
                                 ":/usr/sbin/nologin\n")
    (into / "group").write_text(Path("/etc/group").read_text() + f"{image.user_name}:x:{image.user}:\n")
    return into


def service_account_files(into: Path, token: str, ca: Path, namespace: str) -> Path:
    """The files Kubernetes mounts for the pod's ServiceAccount (readable by any user, as projected)."""
    into.mkdir()
    into.chmod(0o755)
    for name, text in (("token", token), ("ca.crt", ca.read_text()), ("namespace", namespace)):
        (into / name).write_text(text)
        (into / name).chmod(0o644)
    return into


def start(pod: Pod, workdir: Path, binds: Sequence[Path], etc: Path) -> subprocess.Popen[bytes]:
    """The pod's process, in namespaces of its own (root builds them: `sudo -n` when not root); stopping
    the returned `unshare` (`stop`) kills everything in the pod. Its stdout and stderr go to `workdir`."""
    root = workdir / "root"
    root.mkdir()
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    argv = [*sudo, "unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child",
            "sh", "-c", script(pod, root, binds, etc)]
    with open(workdir / "stdout", "wb") as out, open(workdir / "stderr", "wb") as err:
        return spawn(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Kill the pod: its first process (pid 1 of its namespace: its death kills every other), then `unshare`,
    which ignores SIGTERM while it waits. (Should the test process die instead, `unshare` dies with it and the pod
    with `unshare`: `--kill-child` sets the pod's parent-death signal, which dropping to the image's user clears,
    so `setpriv` sets it again.)"""
    first = descendants(proc.pid)
    if first:
        kill = [] if os.geteuid() == 0 else ["sudo", "-n"]
        subprocess.run([*kill, "kill", "-KILL", *map(str, first)], check=False, capture_output=True)
    proc.kill()
    proc.wait(timeout=10)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (`sudo`, `unshare`, the pod), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue  # gone meanwhile
        for child in children:
            found += [child, *descendants(child)]
    return found
