"""The function entry points, one module each, all of one shape: `read` (parse the event, read what
the decision needs fresh into an `Observed` record), `decide` (pure: observed, settings, now → plan),
then `functions.apply.run` applies the plan and re-reads once on a conflict. No handler imports
another: what two of them share is a rule in `functions.rules`."""
