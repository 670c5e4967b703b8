"""The maintenance operations, one module each: what the operation is, declared once (`model.Operation`: its typed
`Params`, the table features it handles, its health signals, how the CLI and Dagster offer it). Its planner imports
the declaration and takes exactly its parameters; the facade (`paimon_ops.api`) binds the two, and lists every
operation. See docs/design.md, "Adding an operation"."""
