"""The SQL layer both SQL backends build on: :mod:`.dialect` (what differs between the
databases' SQL, and the record filters built from it), :mod:`.rows` (a record's row, its
codec, the records a store keeps built, a scope's hidden index tokens, an event's row) and
:mod:`.session` (the primitives both answer with the same SQL)."""
