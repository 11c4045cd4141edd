"""The typed calls and dataclasses match the running server's /openapi.json:
a method per client operation, the dataclass fields the schemas' properties,
and ERROR_CODES the documented error codes."""
import dataclasses
import json
import urllib.request

import tollgate
from tollgate import TollgateClient

METHOD_OF = {
    "signUp": "sign_up", "signUpWithLicenseCode": "sign_up_with_license_code", "activateLicense": "activate_license", "redeemLicense": "redeem",
    "login": "login", "logout": "logout", "getAppContext": "get_app_context", "downloadFile": "download_file",
    "createLease": "create_lease", "listSigningKeys": "get_signing_keys",
    # issues 24 and 25; heartbeatSeat is sent by the heartbeat checkout_seat() starts
    "startTrial": "start_trial", "checkoutSeat": "checkout_seat", "heartbeatSeat": "checkout_seat", "releaseSeat": "release_seat",
    "resetOwnDevices": "reset_devices",
}
SCHEMAS = ["Activation", "AppContext", "Application", "ApplicationFile", "ApplicationVariable", "Membership", "Session", "User", "SeatRelease", "DeviceReset"]


def document(server):
    with urllib.request.urlopen(f"{server.url}/openapi.json", timeout=20) as r:
        return json.loads(r.read())


def test_every_client_operation_has_a_typed_call(server):
    doc = document(server)
    ids = {op["operationId"] for item in doc["paths"].values() for op in item.values() if isinstance(op, dict) and "client" in op.get("tags", [])}
    assert ids == set(METHOD_OF), "a client operation was added or renamed: add its typed call"
    for method in METHOD_OF.values():
        assert callable(getattr(TollgateClient, method))


def test_dataclasses_match_the_schemas(server):
    schemas = document(server)["components"]["schemas"]
    for name in SCHEMAS:
        fields = {f.name for f in dataclasses.fields(getattr(tollgate, name))}
        assert fields == set(schemas[name]["properties"]), name
    codes = schemas["ErrorBody"]["properties"]["code"]["enum"]
    assert set(codes) == set(tollgate.ERROR_CODES)
