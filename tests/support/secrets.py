"""Secret-shaped values for the alert sinks' settings: every one contains `SECRET`, so a leak of any part of
one is found by that word."""

SLACK_PATH = "/services/T0SECRET/B0SECRET/sl4ckSECRETpath"
ROUTING_KEY = "pdR0UT1NGkeySECRET"
TOKEN = "ce-t0ken-SECRET"
PASSWORD = "am-pa55-t0pSECRET"
PASSWORD_HASH = "$2b$04$tatJPtaB0TGq6aDjZFz0O.8CSghO9HcAwu/aJT71gStpb7g6weNCq"
"""bcrypt (cost 4: checked fast) of PASSWORD, as Alertmanager's `basic_auth_users` takes it."""
