"""tollgate: typed, verified calls to a Tollgate server and offline leases (docs/signing.md).

    from tollgate import TollgateClient, TollgateError, hardware_id
"""
from .client import DEFAULT, RELEASE_TIME_MS, SDK_RELEASED_AT, TollgateClient
from .errors import (
    FieldError,
    TollgateError,
    TollgateException,
    TollgateLeaseError,
    TollgateNetworkError,
    TollgateRefusedError,
    TollgateSeatLostError,
    TollgateUnavailableError,
    TollgateVerificationError,
)
from .hardware_id import hardware_id, os_machine_id
from .lease import LEASE_VERDICTS, LeaseCheck, LeaseEntitlement, LeasePayload, RollbackState, check_lease, hwid_hash, live_entitlements, parse_lease
from .seats import HEARTBEAT_FRACTION
from .store import FileLeaseStore, Folders, LeaseStore, MemoryLeaseStore, app_data_folders
from .transport import CONNECT_TIMEOUT_S, DROP_CODES, TOTAL_TIMEOUT_S, Clock
from .types import (
    ERROR_CODES,
    Access,
    Activation,
    AppContext,
    Application,
    ApplicationFile,
    ApplicationVariable,
    DeviceReset,
    DownloadResult,
    ErrorCode,
    KeyList,
    LeaseInfo,
    LicenseCodeAuth,
    Membership,
    PasswordAuth,
    Redemption,
    Seat,
    SeatRelease,
    Session,
    SessionAuth,
    SigningKey,
    Trial,
    User,
    UserAuth,
)
from .verify import (
    ANSWER_VERDICTS,
    CREDENTIAL_HEADERS,
    AnswerCheck,
    Certificate,
    Pinned,
    SignedRequest,
    check_certificate,
    credentials_sha256,
    decode_certificate,
    download_line,
    parse_signature_header,
    verify_answer,
)

__version__ = "0.1.0"
__all__ = [name for name in dir() if not name.startswith("_")]
