#!/usr/bin/env python3
"""A Tollgate client a vendor can copy: log in (or redeem a license code),
check the membership, read a variable, unlock a feature the user's tier grants
(`has("pro")`), hold a floating seat while working (checked out, kept alive by
its heartbeat, released), download a file (resuming an interrupted download),
take an offline lease, and keep working offline on it when the server cannot
be reached. Prints what it did.

Configuration (environment):
  TOLLGATE_URL, TOLLGATE_APP_ID, TOLLGATE_APP_KEY, TOLLGATE_APP_SECRET,
  TOLLGATE_ROOT_KEY          the public root key printed by `tollgate keys init`
  LICENSE_CODE               a license code, or
  TOLLGATE_USERNAME, TOLLGATE_PASSWORD
  TOLLGATE_HARDWARE_ID       optional: your own device id (default: hashed OS machine id)
  TOLLGATE_DOWNLOAD_DIR      optional: where the file goes (default: the current folder)
  TOLLGATE_SEATS             optional: 1 when the app sells floating seats (check one out while working)
  TOLLGATE_WORK_SECONDS      optional: how long the "work" holding the seat lasts (default 0)

Exit codes: 0 the app may run; 1 the server said no; 2 no active membership;
3 an answer failed verification (not our server); 4 offline and no usable lease;
5 the connection failed during the download.
"""
import os
import sys
import time
from datetime import datetime, timezone

from tollgate import (
    LicenseCodeAuth,
    TollgateClient,
    TollgateError,
    TollgateLeaseError,
    TollgateNetworkError,
    TollgateSeatLostError,
    TollgateUnavailableError,
    TollgateVerificationError,
    hardware_id,
)


def when(ms):
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def sign_in(client, code, username, password):
    """Redeems the license code (once) or logs in. Without an answer from the server this is skipped: check_access()
    then decides, from the same failure, whether the lease may be used."""
    try:
        if code:  # a license-only user: redeem the code once, then the code is the credential
            client.auth = LicenseCodeAuth(code)
            try:
                client.sign_up_with_license_code(code)
                print("redeemed license code")
            except TollgateError as err:
                if err.code != "license_used":
                    raise
                print("license code already redeemed")
        else:
            client.login(username, password)
            print(f"logged in as {username}")
    except (TollgateNetworkError, TollgateUnavailableError, TollgateVerificationError) as err:
        print(f"could not sign in now ({err})")


def online(client, ctx, download_dir):
    if ctx.user is None or not ctx.user.membership.is_active:
        print("no active membership: buy or activate a license")
        return 2
    m = ctx.user.membership
    print(f"membership active ({'lifetime' if m.is_lifetime else 'until ' + str(m.active_until)}) for {ctx.user.username}")
    print(f"variable latest_version = {ctx.application.variable('latest_version')}")
    gated_feature(client)

    if ctx.application.files:
        f = ctx.application.files[0]
        result = client.download_file(f.id, os.path.join(download_dir, f.name))
        how = "resumed" if result.resumed else "whole"
        print(f"downloaded {f.name} ({how}): {result.size} bytes, sha256 {result.sha256} checked against the signed hash")

    # check_access() stored or renewed the offline lease when it was due (and the app offers leases).
    lease = client.stored_lease()
    if lease is not None:
        print(f"offline lease #{lease.seq} valid until {when(lease.exp)}, renew after {when(lease.renew_after)}")
    else:
        print("no offline lease (disabled for this app)")
    if os.environ.get("TOLLGATE_SEATS") == "1":
        with_a_seat(client, float(os.environ.get("TOLLGATE_WORK_SECONDS", "0")))
    return 0


def gated_feature(client):
    """A feature of the Pro tier: has() answers from the last verified answer (online) or the verified lease (offline)."""
    if client.has("pro"):
        print("pro: PDF export enabled")
    else:
        print("pro: not in this license (PDF export disabled)")
    if client.is_trial():
        print("trial: this is a time-limited trial")


def with_a_seat(client, seconds):
    """A floating license: a seat is held while the app works, kept alive by the background heartbeat, and given
    back at the end (the client's close() or interpreter exit would too). A lost seat is reported to on_seat_lost
    and raised by the next call: stop the work then."""
    try:
        seat = client.checkout_seat()
    except TollgateError as err:
        if err.code in ("seats_exhausted", "seats_not_enabled"):
            extra = f" ({err.extra.get('in_use')}/{err.extra.get('max')} in use, next free at {err.extra.get('next_free_at')})" if err.code == "seats_exhausted" else ""
            print(f"no seat: {err.code}{extra}")
            return
        raise
    print(f"seat {seat.id} checked out ({seat.in_use}/{seat.max} in use), heartbeat every {seat.heartbeat_seconds / 3:g} s")
    time.sleep(seconds)  # the work; the heartbeat runs meanwhile
    try:
        client.entitlements()  # any call raises TollgateSeatLostError if the seat was lost meanwhile
    except TollgateSeatLostError as err:
        print(f"seat lost ({err.reason}): stopping the work")
        return
    held = client.seat
    print(f"seat still held, expires at {held.expires_at}")
    released = client.release_seat()  # a seat an offline lease holds stays taken until the lease ends; the lease is kept
    print(f"seat released: {released.released}" + (f", held by the offline lease until {released.held_until}" if released.held_until else ""))


def offline(client, access):
    lease = access.lease
    print(f"server unreachable ({access.cause}); offline: lease #{lease.seq} ok until {when(lease.expires_at)}; "
          f"offline runtime used {lease.runtime_used_ms / 1000:.0f} s of {lease.runtime_budget_ms / 1000:.0f} s"
          + ("; renew when online" if lease.renew_due else ""))
    gated_feature(client)  # from the verified lease now
    # A real app keeps running and calls client.check_access() (or check_lease()) every minute or so: it counts the
    # offline runtime, and stops when it raises.
    return 0


def main():
    env = os.environ
    app_id = env["TOLLGATE_APP_ID"]
    client = TollgateClient(
        base_url=env["TOLLGATE_URL"],
        app_key=env["TOLLGATE_APP_KEY"],
        app_secret=env["TOLLGATE_APP_SECRET"],
        app_id=app_id,                                  # pinned, with the root key
        root_public_key=env["TOLLGATE_ROOT_KEY"],
        hardware_id=env.get("TOLLGATE_HARDWARE_ID") or hardware_id(app_id),
    )
    sign_in(client, env.get("LICENSE_CODE"), env.get("TOLLGATE_USERNAME"), env.get("TOLLGATE_PASSWORD"))
    try:
        access = client.check_access()  # online, or the lease exactly when no answer from Tollgate arrived
        if access.source == "lease":
            return offline(client, access)
        return online(client, access.context, env.get("TOLLGATE_DOWNLOAD_DIR", "."))
    except TollgateLeaseError as err:
        print(f"offline lease refused: {err.verdict} (online: {err.cause})")
        return 4
    except TollgateVerificationError as err:
        print(f"answer refused: {err.verdict} (not our server, or tampered with)")
        return 3
    except TollgateError as err:
        reason = f"; reason: {err.ban_reason}" if err.ban_reason else ""
        print(f"server refused: {err.code} ({err.status}): {err.detail}{reason}")
        return 1
    except (TollgateNetworkError, TollgateUnavailableError) as err:  # the connection failed during the download
        print(f"server unreachable during the download ({err}); try again later")
        return 5


if __name__ == "__main__":
    sys.exit(main())
