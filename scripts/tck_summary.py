"""Counts a TCK JUnit report's tests by transport and outcome, for scripts/tck.

    python3 scripts/tck_summary.py reports/junit-must.xml

A test belongs to the transport its parameter or name names (`[grpc]`, `-jsonrpc]`,
`_rest`, ...) or its class does (`TestGrpc...`, `tests.compatibility.grpc...`); others, such
as the agent card tests, count under `any`. Skipped tests are listed with their reason.
"""

import collections
import re
import sys
import xml.etree.ElementTree as ET

TRANSPORTS = (
    ("grpc", re.compile(r"grpc", re.I)),
    ("jsonrpc", re.compile(r"jsonrpc|\.sse|TestSse", re.I)),
    ("http_json", re.compile(r"http_json|_rest\b|TestRest", re.I)),
)


def transport_of(classname: str, name: str) -> str:
    for place in (name, classname):
        for transport, pattern in TRANSPORTS:
            if pattern.search(place):
                return transport
    return "any"


def main(path: str) -> None:
    counts = collections.Counter()
    skips = collections.defaultdict(list)
    for case in ET.parse(path).iter("testcase"):
        transport = transport_of(case.get("classname", ""), case.get("name", ""))
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped":
                outcome = "skipped"
                skips[transport].append(f"{case.get('name')}: {child.get('message', '')}")
        counts[(transport, outcome)] += 1
    for transport in ("grpc", "jsonrpc", "http_json", "any"):
        row = {outcome: counts[(transport, outcome)] for outcome in ("passed", "failed", "skipped")}
        print(f"  {transport:<10} passed {row['passed']:>3}  failed {row['failed']:>3}  skipped {row['skipped']:>3}")
    for transport in ("grpc", "jsonrpc", "http_json", "any"):
        for skip in skips[transport]:
            print(f"  skipped ({transport}) {skip}")


if __name__ == "__main__":
    main(sys.argv[1])
