"""`make bench` (`python -m localstack.bench`): the figures (`run`), the stack they are taken on
(`stack`) and the bare functions-framework function of the floor (`noop`)."""
