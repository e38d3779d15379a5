//! Telling a table that does not exist from one that cannot be read.

/// Whether a catalog answered that a table (or its namespace) does not exist: a metadata file
/// that cannot be read is another error (damage).
pub(super) fn absent(e: &iceberg::Error) -> bool {
    matches!(
        e.kind(),
        iceberg::ErrorKind::TableNotFound | iceberg::ErrorKind::NamespaceNotFound
    )
}
