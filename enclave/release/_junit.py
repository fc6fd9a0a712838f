"""JUnit XML of a release report: one testcase per specimen, no content.

A must-hold specimen that does not hold is a failure whose message is its label and
reason (and, in a v1 report, the layers that changed); other members pass (their label
is in the testcase's ``system-out``)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

__all__ = ["junit_xml"]


def junit_xml(predicate: Mapping[str, Any]) -> bytes:
    rows = list(predicate.get("specimens") or ())
    failing = set(predicate.get("gate", {}).get("failing") or ())
    suite = ET.Element(
        "testsuite",
        name="replay-enclave regress",
        tests=str(len(rows)),
        failures=str(len(failing)),
        errors="0",
    )
    for row in rows:
        case = ET.SubElement(suite, "testcase", classname="specimen-library", name=row["specimen"])
        message = row["label"] + (f": {row['reason']}" if row.get("reason") else "")
        if row["label"] == "equivalent" and row.get("layers_changed"):
            message += "; layers changed: " + ", ".join(row["layers_changed"])
        if row["specimen"] in failing:
            failure = ET.SubElement(case, "failure", message=message, type=row["label"])
            failure.text = message
        else:
            ET.SubElement(case, "system-out").text = message
    suites = ET.Element("testsuites")
    suites.append(suite)
    out: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return out
