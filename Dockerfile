# The single image of every function: FUNCTION_TARGET picks the function (see knative/base/services.yaml).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY events ./events
COPY functions ./functions
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
# The git commit the image is built from (`make image` passes it): crefn_build_info's `revision`, and the start-up
# line's. A build that does not say is `unknown`.
ARG CREFN_REVISION=unknown
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin crefn
COPY --from=build /install /usr/local
ENV PYTHONUNBUFFERED=1 PORT=8080 FUNCTION_SIGNATURE_TYPE=http CREFN_REVISION=${CREFN_REVISION}
# The Services run on a read-only root: gunicorn's worker heartbeat file (and any other temporary file) goes to
# /dev/shm, the memory-backed tmpfs every container has; without a writable TMPDIR gunicorn exits at start-up.
ENV TMPDIR=/dev/shm
WORKDIR /app
USER 10001
EXPOSE 8080
# functions-framework reads FUNCTION_TARGET and PORT; the source is the installed functions/main.py.
CMD ["sh", "-c", "exec functions-framework --source \"$(python -c 'import functions.main as m; print(m.__file__)')\" --target \"$FUNCTION_TARGET\""]
