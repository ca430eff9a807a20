"""`parity`: in observe mode, CRE Job add/update → CRE's verdict against the functions' (`dev.crefn.parity.checked`).

Beside CRE, every change of a managed Job is CRE's (the functions write nothing). read: nothing in manage mode
or for a delete; else the Job fresh (the event is a cue: its copy may be stale or forged), the TrainJob its
`workloadRef` names (else `<job>-workload`) when the Job controls it, the pods labelled with the Job, and the
checkpoint evidence when it could change a restart decision. decide: `functions.rules.parity.decide`. The checks
are counted in `crefn_parity_checks_total{field,result}` once per check (`data.check`) in this process.
"""

from __future__ import annotations

from events.emitted import JobRef, ParityCheckedData
from events.envelope import Envelope, ResourceChange, parse_apiserver_event
from events.types import ApiServerType
from functions.apply import run
from functions.context import Context
from functions.errors import PermanentError
from functions.metrics import count_parity
from functions.plan import Outcome
from functions.reads import read_goodputs, read_job, read_job_pods, read_trainjob
from functions.rules import parity as rules
from functions.rules.attempts import workload_name
from functions.rules.jobs import Gone, parse_job
from functions.rules.measurements import has_checkpoint
from functions.rules.parity import Observed, Read, Skipped, decide
from functions.rules.phase import parse_trainjob
from functions.rules.restart import decide_restart

FUNCTION = rules.FUNCTION
ACCEPTS = frozenset({ApiServerType.RESOURCE_ADD.value, ApiServerType.RESOURCE_UPDATE.value,
                     ApiServerType.RESOURCE_DELETE.value})


def read(env: Envelope, ctx: Context) -> Observed:
    change = parse_apiserver_event(env)
    if not isinstance(change, ResourceChange):
        raise PermanentError("parity takes ApiServerSource Resource-mode events")
    seen = parse_job(change.object, ctx.settings.cre_group)
    if not ctx.settings.observe:
        return Skipped("manage mode: the functions write the verdicts, there is nothing to compare")
    if change.verb == "delete":
        return Skipped(f"{seen.where} was deleted")
    state = read_job(ctx, seen.ref.namespace, seen.ref.name)
    if state is None:
        return Gone(seen.ref)
    ref = state.job.status.workload_ref
    trainjob = read_trainjob(ctx, state.ref.namespace, ref.name if ref else workload_name(state.ref.name))
    owner = parse_trainjob(trainjob).controller_owner() if trainjob is not None else None
    if owner is None or owner.uid != state.job.metadata.uid:
        trainjob = None
    evidence = None
    if ctx.settings.require_checkpoint_evidence and decide_restart(state, True, True).restart:
        evidence = has_checkpoint(read_goodputs(ctx, state, True), state.ref.name)
    return Read(env, JobRef(name=state.ref.name, namespace=state.ref.namespace), state, trainjob,
                read_job_pods(ctx, state), evidence)


def handle(env: Envelope, ctx: Context) -> Outcome:
    outcome = run(ctx, lambda: read(env, ctx), decide)
    if outcome.reply is not None and isinstance(outcome.reply.data, ParityCheckedData):
        data = outcome.reply.data
        count_parity(data.check, [(f.field, f.result) for f in data.fields])
    return outcome
