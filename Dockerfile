# The single image of every function: FUNCTION_TARGET picks the function (see knative/base/services.yaml).
# Built for amd64 and arm64 alike (docs/operating.md, "Build the image"):
#   docker buildx build --platform linux/amd64,linux/arm64 --build-arg CREFN_REVISION=$(git rev-parse HEAD) -t IMAGE --push .
# The base is python:3.11-slim (3.11.16-slim-trixie when pinned), by the digest of its multi-platform index, so that
# every build of a commit starts from the same bytes on each platform; a newer base is a new digest, committed.
FROM python:3.11-slim@sha256:1042b61448fef4ba92d16a8c7eb4996d027568ce64792a7877fd88511e0af7c6 AS build
WORKDIR /src
# The dependencies from the lock (`make lock`), each file checked against its hashes, before the code: a change of
# the code alone reuses this layer. Then the project's own wheel, built by the locked setuptools, without deps.
COPY requirements.lock build-requirements.lock ./
RUN pip install --no-cache-dir --require-hashes -r build-requirements.lock \
 && pip install --no-cache-dir --prefix=/install --ignore-installed --require-hashes -r requirements.lock
COPY pyproject.toml README.md LICENSE ./
COPY events ./events
COPY functions ./functions
RUN pip install --no-cache-dir --prefix=/install --no-deps --no-build-isolation .

FROM python:3.11-slim@sha256:1042b61448fef4ba92d16a8c7eb4996d027568ce64792a7877fd88511e0af7c6
# The git commit the image is built from (`make image` passes it): crefn_build_info's `revision`, and the start-up
# line's. A build that does not say is `unknown`.
ARG CREFN_REVISION=unknown
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin crefn
COPY --from=build /install /usr/local
ENV PYTHONUNBUFFERED=1 PORT=8080 FUNCTION_SIGNATURE_TYPE=http CREFN_REVISION=${CREFN_REVISION}
# The Services run on a read-only root: gunicorn's worker heartbeat file (and any other temporary file) goes to
# /dev/shm, the memory-backed tmpfs every container has; without a writable TMPDIR gunicorn exits at start-up.
ENV TMPDIR=/dev/shm
# pydantic looks for its plugins in the entry points of every installed distribution as it builds its first model,
# on every start (about 8 ms of each cold start); the functions use none. A Service that adds one sets it empty.
ENV PYDANTIC_DISABLE_PLUGINS=__all__
WORKDIR /app
USER 10001
EXPOSE 8080
# functions-framework reads FUNCTION_TARGET and PORT; the source is the installed functions/main.py, found by
# importing the bare package (about 20 ms: importing functions.main would load functions-framework and Flask once
# more, about 200 ms of every cold start, only to print a path).
CMD ["sh", "-c", "exec functions-framework --source \"$(python -c 'import functions; print(functions.__path__[0])')/main.py\" --target \"$FUNCTION_TARGET\""]
