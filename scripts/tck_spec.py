"""A pytest plugin that checks tiny-harness against A2A 1.0.1's error table, not 1.0.0's.

The kit (branch 1.0-dev) predates A2A 1.0.1, whose fix "recent transcoding-related error
changes" made each HTTP status of §5.4 the one `google.rpc.Code` maps its gRPC status to:
TaskNotCancelable 409 -> 400, ContentTypeNotSupported 415 -> 400, InvalidAgentResponse
502 -> 500, and PushNotificationNotSupported, UnsupportedOperation and VersionNotSupported
UNIMPLEMENTED -> FAILED_PRECONDITION on gRPC. tiny-harness answers as 1.0.1 says (as the
official a2a-sdk does), so scripts/tck loads this plugin (`-p tck_spec`) to give the kit's
error bindings the 1.0.1 values before its validators read them. A2A_TCK_SPEC=1.0.0 leaves the
kit's own table (docs/conformance.md lists the tests that then differ).
"""

import os

# (error name, HTTP status, gRPC status) as A2A 1.0.1's §5.4 gives them, where they changed.
_CHANGED_IN_1_0_1 = [
    ("TaskNotCancelableError", 400, "FAILED_PRECONDITION"),
    ("PushNotificationNotSupportedError", 400, "FAILED_PRECONDITION"),
    ("UnsupportedOperationError", 400, "FAILED_PRECONDITION"),
    ("ContentTypeNotSupportedError", 400, "INVALID_ARGUMENT"),
    ("InvalidAgentResponseError", 500, "INTERNAL"),
    ("VersionNotSupportedError", 400, "FAILED_PRECONDITION"),
]

if os.environ.get("A2A_TCK_SPEC", "1.0.1") == "1.0.1":
    from tck.requirements import base

    for name, http_status, grpc_status in _CHANGED_IN_1_0_1:
        binding = base.ERROR_BINDINGS[name]
        binding.http_status = http_status
        binding.grpc_status = grpc_status
