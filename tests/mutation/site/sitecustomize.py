"""On PYTHONPATH during `make mutation` only: a function served in a child process (functions-framework)
runs mutmut's trampolines too, and while mutmut maps which tests reach which function (MUTANT_UNDER_TEST
is `stats`) this appends each hit to `$MUTMUT_SERVED_HITS/<pid>`, for the test process to pick up."""

import os

if os.environ.get("MUTANT_UNDER_TEST") == "stats" and os.environ.get("MUTMUT_SERVED_HITS"):
    import mutmut.mutation.trampoline as _trampoline

    def _record(name: str, caller: str | None = None) -> None:
        path = os.path.join(os.environ["MUTMUT_SERVED_HITS"], str(os.getpid()))
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{name}\n".encode())
        finally:
            os.close(fd)

    _trampoline.record_trampoline_hit = _record
