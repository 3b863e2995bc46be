"""In-memory state of the running test IdP (one process, many threads)."""

import threading

MODES = (
    "normal",
    "slow",
    "garbage",
    "empty-error",
    "oversized",
    "down-5xx",
    "nonstandard-error",
    "slow-down",
)

_lock = threading.Lock()
_mode = {"mode": "normal", "remaining": None, "seconds": 30.0}
# token_family (str) -> {"reuse": n, "revoked_use": n}
_family_events = {}


def set_mode(mode, count=None, seconds=30.0):
    with _lock:
        _mode.update(mode=mode, remaining=count, seconds=seconds)


def get_mode():
    with _lock:
        return dict(_mode)


def take_mode():
    """The mode for one token request; counts it down when the mode was set with count=N."""
    with _lock:
        mode = _mode["mode"]
        if mode == "normal":
            return mode, 0.0
        if _mode["remaining"] is not None:
            _mode["remaining"] -= 1
            if _mode["remaining"] <= 0:
                _mode.update(mode="normal", remaining=None)
        return mode, _mode["seconds"]


def record_revoked_use(token_family, superseded):
    """A revoked refresh token was presented: a reuse (it had been rotated) or the use of a
    token revoked through /o/revoke_token/ or /test/revoke-user-tokens."""
    if token_family is None:
        return
    with _lock:
        events = _family_events.setdefault(str(token_family), {"reuse": 0, "revoked_use": 0})
        events["reuse" if superseded else "revoked_use"] += 1


def family_events(token_family):
    with _lock:
        return dict(_family_events.get(str(token_family), {"reuse": 0, "revoked_use": 0}))
