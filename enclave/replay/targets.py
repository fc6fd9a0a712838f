"""What an intervention or a cut may name in a record, checked without replaying.

For governance (eligibility, the policy's targets, the schema view of a boundary):
JSON Pointers into a call's response and its schema (``parse_pointer``,
``schema_at``), the neutral value a ``nullify`` writes for a schema
(``neutral_value``), and whether a named cut lies in a record before the targets
(``check_cut_in_record``).
"""

from ._cuts import check_cut_in_record
from ._interventions import neutral_value
from ._pointer import parse_pointer, schema_at

__all__ = ["check_cut_in_record", "neutral_value", "parse_pointer", "schema_at"]
